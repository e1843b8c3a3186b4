package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/schedrl/schedrl/defrag/online"
)

// `defrag online --model` with a placement checkpoint runs the whole DRR policy: the
// checkpoint places, online.DRRRescheduler reschedules on the periodic trigger. By directory and by
// registry reference it is the run of --placer ckpt:DIR --method greedy.
func TestDefragOnlineDRRModel(t *testing.T) {
	cfg, ckpt := placementRegistry(t)
	run := func(model, placer, method string) map[string]any {
		t.Helper()
		var out bytes.Buffer
		o := onlineOptions(method)
		o.Model, o.Placer, o.Registry, o.SampleNodes, o.Load, o.Out = model, placer, cfg.Registry, 64, 0.9, &out
		o.Duration, o.Warmup = 3*3600, 1800
		o.Online.Trigger, o.Explicit = "periodic", map[string]bool{"every": true}
		o.Online.Every = 1800
		if err := runDefragOnline(context.Background(), o); err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(out.Bytes(), &m); err != nil {
			t.Fatalf("%v\n%s", err, out.String())
		}
		return m
	}
	want := run("", "ckpt:"+ckpt, online.DRRRescheduler)
	if want["invocations"].(float64) == 0 {
		t.Fatalf("the rescheduler was never invoked: %v", want)
	}
	for _, model := range []string{ckpt, "placement@champion"} {
		got := run(model, "fgd", "none")
		for _, k := range []string{"frag_ratio_mean_pct", "completion_mean_s", "migrations", "invocations"} {
			if got[k] != want[k] {
				t.Errorf("--model %s: %s %v, --placer ckpt:DIR --method %s %v", model, k, got[k], online.DRRRescheduler, want[k])
			}
		}
		if got["method"] != "model:"+model {
			t.Errorf("--model %s: method %v", model, got["method"])
		}
	}
}
