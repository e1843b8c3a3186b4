package config

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// A pod's --set flags give it the driver's sections: every changed key under the prefixes,
// lists with commas in their items and durations included, and nothing else.
func TestSetArgsRoundTrip(t *testing.T) {
	c := Default()
	c.DefragOnline.Loads = []float64{0.9, 1.25}
	c.DefragOnline.Expert, c.DefragOnline.Budget, c.DefragOnline.HeldOut = "greedy", 3, "7,9-11"
	c.Finetune.Traces = []string{"gpushare40", "a,b.csv"}
	c.Pipeline.Executor.Timeout = 90 * time.Second
	c.Sim.Tune = 1.5 // not under the prefixes: stays unsaid
	args, err := SetArgs(c, "defrag_online", "finetune.traces", "pipeline.executor.timeout")
	if err != nil {
		t.Fatal(err)
	}
	if len(args) != 2*6 || slices.Contains(args, "sim.tune=1.5") {
		t.Errorf("args %q: want the 6 changed keys under the prefixes", args)
	}
	flags := pflag.NewFlagSet("pod", pflag.ContinueOnError)
	AddFlags(flags, "")
	if err := flags.Parse(args); err != nil {
		t.Fatal(err)
	}
	pod, err := Load("", flags)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(pod.DefragOnline, c.DefragOnline) || !slices.Equal(pod.Finetune.Traces, c.Finetune.Traces) || pod.Pipeline.Executor.Timeout != c.Pipeline.Executor.Timeout {
		t.Errorf("args %q\ngive %+v %q %v\nwant %+v %q %v", args, pod.DefragOnline, pod.Finetune.Traces, pod.Pipeline.Executor.Timeout,
			c.DefragOnline, c.Finetune.Traces, c.Pipeline.Executor.Timeout)
	}
	if args, _ := SetArgs(Default(), "defrag_online", "maifs"); len(args) != 0 {
		t.Errorf("the defaults gave %q", args)
	}
}
