package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedrl/schedrl/eval"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/internal/repotest"
	"github.com/schedrl/schedrl/pipeline"
)

// TestDefragOnlinePipeline runs configs/defrag-online-smoke.yaml end to end with a file
// registry: greedy's invocations as logs, defrag transitions, BC, PPO in defrag-online, the
// held-out timeline with the gate on the whole-GPU delay, a published defrag-smoke version;
// a second run skips every stage, and `defrag online --model defrag-smoke@1` runs the
// published network to the eval's number for the same timeline.
func TestDefragOnlinePipeline(t *testing.T) {
	const cfgPath = "configs/defrag-online-smoke.yaml"
	first, dir, store, env := runFamilyPipeline(t, cfgPath)
	pub := readPublished(t, first)
	if pub.Ref != "defrag-smoke@1" || !strings.Contains(pub.Decision.Reason, "queue_delay_whole-gpu_mean_s") {
		t.Fatalf("published %+v: want defrag-smoke@1 with the whole-GPU gate's reason", pub)
	}
	second := runCLIConfig(t, cfgPath, dir, env)
	for _, s := range second.Stages {
		if s.Status != pipeline.StatusCached {
			t.Errorf("second run: stage %s %s, want cached", s.Name, s.Status)
		}
	}

	report, err := eval.ReadTimedMetrics(filepath.Join(stageOf(t, first, "eval").Output.Dir, "metrics.json"))
	if err != nil {
		t.Fatal(err)
	}
	var candidate *eval.TimedSeedRun
	for i := range report.Results {
		r := &report.Results[i]
		if strings.HasPrefix(r.Policy, "ckpt:") && strings.Contains(r.Policy, "/finetune/") {
			candidate = &r.PerSeed[0]
		}
		if r.Policy == "greedy" && r.PerSeed[0].Migrations == 0 {
			t.Errorf("greedy migrated nothing on the held-out timeline: %+v", r.PerSeed[0])
		}
	}
	if candidate == nil {
		t.Fatalf("no fine-tuned checkpoint among the eval's policies %v", report.Policies)
	}
	var out bytes.Buffer
	o := defaultDefragOnlineOptions()
	o.Nodes, o.Pods, o.Load, o.Seed, o.Model = repotest.OpenbNodes(), repotest.OpenbPods("default"), 1.1, candidate.Seed, "defrag-smoke@1"
	o.Duration, o.Warmup, o.Cap, o.JSON, o.Out = 7200, 1800, 3600, true, &out
	o.Online.Every, o.Online.HeadWait = 300, 60
	o.Registry = config.Default().Registry
	o.Registry.Store, o.Registry.Tracking.URI = store, ""
	if err := runDefragOnline(context.Background(), &o); err != nil {
		t.Fatal(err)
	}
	var got defragOnlineSummary
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.WholeGPUDelayMean != candidate.QueueDelay[eval.WholeGPUDelay] || got.Migrations != candidate.Migrations {
		t.Errorf("defrag online --model defrag-smoke@1: whole-GPU delay %v, %d migrations; the eval measured %v, %d",
			got.WholeGPUDelayMean, got.Migrations, candidate.QueueDelay[eval.WholeGPUDelay], candidate.Migrations)
	}
}
