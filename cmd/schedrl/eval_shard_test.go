package main

import (
	"context"
	"reflect"
	"testing"
)

// A shard's pod command (the eval keys that differ from the defaults, as flags) gives the pod
// the driver's eval section: list items with commas, timed keys and keys without a flag of
// their own survive the trip; the paper overlay stays with the merge.
func TestEvalShardArgsRoundTrip(t *testing.T) {
	parse := func(args ...string) *evalOptions {
		t.Helper()
		var got *evalOptions
		cmd := newEvalCmd(func(_ context.Context, o *evalOptions) error { got = o; return nil })
		cmd.SetArgs(args)
		if err := cmd.Execute(); err != nil {
			t.Fatal(err)
		}
		return got
	}
	for _, line := range [][]string{
		{"--policies", "fgd,bestfit,random", "--traces", "default,gpushare60", "--seeds", "49-60", "--tune", "1.25", "--baseline", "bestfit"},
		{"--timed", "fungible", "--policies", "fifo,synergy-tune/srtf", "--generate", "jobs=20,lam=300,multigpu", "--traces", "hand.trace",
			"--cluster", "8:8:8", "--servers-gpus", "4", "--round", "120", "--seeds", "3-4", "--set", "eval.timed.series_step=30",
			"--set", "eval.timed.throughputs=/elsewhere/throughputs.json"},
		{"--timed", "tasks", "--policies", "fgd", "--traces", "default", "--load", "0.9", "--tasks", "5000", "--cap", "0", "--warmup", "60", "--queue", "fifo"},
	} {
		driver := parse(append(line, "--out", "/tmp/driver")...)
		pod := parse(append(driver.Args[1:], "--out", "/tmp/driver")...)
		want, got := driver.Config.Eval, pod.Config.Eval
		want.PaperOverlay = false
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%v\npod args %q\ngive %+v\nwant %+v", line, driver.Args, got, want)
		}
	}
}
