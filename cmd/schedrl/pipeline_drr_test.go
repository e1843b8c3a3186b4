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

// TestDRRPipeline runs configs/drr-smoke.yaml end to end through a file registry: FGD's timed
// logs on sub-clusters, the placement dataset, cloning, PPO in the drr world, the drr eval on
// held-out timelines with each policy's time-averaged fragmentation rate, and a published
// drr-smoke@1 whose gate compared that rate and the GPU queueing delay's guardrail against FGD
// seed by seed; a second run skips every stage, and `defrag online --model drr-smoke@1` (the
// whole DRR policy from the registry) runs to the eval's numbers for the same timeline.
func TestDRRPipeline(t *testing.T) {
	const cfgPath = "configs/drr-smoke.yaml"
	first, dir, store, env := runFamilyPipeline(t, cfgPath)
	if m := stageOf(t, first, "logs").Metric; m == nil || m.Name != "starts" || m.Value == 0 {
		t.Errorf("logs stage metric %+v, want FGD's starts", m)
	}
	pub := readPublished(t, first)
	var rate, guard bool
	for _, c := range pub.Decision.Comparisons {
		switch {
		case c.Metric == "frag_ratio_mean_pct" && c.Against == "fgd" && c.GainLow != nil && c.Tolerance == nil:
			rate = true
		case c.Metric == "queue_delay_gpu_mean_s" && c.Against == "fgd" && c.Tolerance != nil && *c.Tolerance == 60:
			guard = true
		}
	}
	if pub.Ref != "drr-smoke@1" || !rate || !guard || pub.Decision.Reason == "" {
		t.Fatalf("published %+v: want drr-smoke@1 gated on frag_ratio_mean_pct with the GPU delay's guardrail", pub)
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
	var candidate *eval.TimedResult
	for i := range report.Results {
		r := &report.Results[i]
		if r.FragRatioMeanPct == nil || len(r.PerSeed) != 2 {
			t.Fatalf("%s: no fragmentation rate for both seeds: %+v", r.Policy, r)
		}
		if strings.HasPrefix(r.Policy, "ckpt:") && strings.Contains(r.Policy, "/finetune/") {
			candidate = r
		}
	}
	if candidate == nil || candidate.VsBaseline["frag_ratio_mean_pct"] == nil {
		t.Fatalf("no fine-tuned checkpoint paired with fgd on the rate among %v", report.Policies)
	}
	run := candidate.PerSeed[0]
	var out bytes.Buffer
	o := defaultDefragOnlineOptions()
	o.Nodes, o.Pods, o.Load, o.Seed, o.SampleNodes = repotest.OpenbNodes(), repotest.OpenbPods("default"), 0.7, run.Seed, 16
	o.Duration, o.Warmup, o.Cap, o.JSON, o.Out = 3600, 1800, 1800, true, &out
	o.Model, o.Online.Trigger = "drr-smoke@1", "periodic"
	o.Registry = config.Default().Registry
	o.Registry.Store, o.Registry.Tracking.URI = store, ""
	if err := runDefragOnline(context.Background(), &o); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Rate       float64 `json:"frag_ratio_mean_pct"`
		Migrations int     `json:"migrations"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if got.Rate != *run.FragRatioMeanPct || got.Migrations != run.Migrations {
		t.Errorf("defrag online --model drr-smoke@1 seed %d: rate %v, %d migrations; the eval measured %v, %d",
			run.Seed, got.Rate, got.Migrations, *run.FragRatioMeanPct, run.Migrations)
	}
}
