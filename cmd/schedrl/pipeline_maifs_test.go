package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/schedrl/schedrl/eval"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/pipeline"
)

// TestMAIFSPipeline runs configs/maifs-smoke.yaml end to end with a file registry: TUNE-SRTF's
// decision logs in the fungible world, the multi-agent dataset rebuilt from them, behaviour
// cloning, multi-agent PPO, the timed fungible eval on held-out seeds, and a published
// maifs-smoke version with the paired gate's reason on both avg JCT and makespan; a second run
// skips every stage, and `schedrl jobs --policy maifs-smoke@1` runs the published network to
// the eval's numbers for the same seed.
func TestMAIFSPipeline(t *testing.T) {
	const cfgPath = "configs/maifs-smoke.yaml"
	first, dir, store, env := runFamilyPipeline(t, cfgPath)
	pub := readPublished(t, first)
	metrics := map[string]bool{}
	for _, c := range pub.Decision.Comparisons {
		metrics[c.Metric] = true
	}
	if pub.Ref != "maifs-smoke@1" || !metrics["avg_jct_s"] || !metrics["makespan_s"] || pub.Decision.Reason == "" {
		t.Fatalf("published %+v: want maifs-smoke@1 gated on avg_jct_s and makespan_s", pub)
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
	}
	if candidate == nil || candidate.MAIFS == nil || candidate.MAIFS.Decisions == 0 {
		t.Fatalf("no fine-tuned multi-agent checkpoint among the eval's policies %v", report.Policies)
	}
	if !slices.Contains(report.Policies, "synergy-tune/srtf") {
		t.Fatalf("eval policies %v", report.Policies)
	}
	opts := fungibleJobsOptions("maifs-smoke@1")
	opts.Config = config.Default()
	opts.Config.Device = config.DeviceConfig{Name: "cpu", Threads: 1}
	opts.Config.Registry.Store, opts.Config.Registry.Tracking.URI = store, ""
	opts.Cluster, opts.Fungible.Generate, opts.Seed = "8:8:8", "jobs=30,lam=400,multigpu", candidate.Seed
	var out bytes.Buffer
	opts.Out = &out
	if err := runJobs(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	var got fungibleSummary
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Makespan != candidate.Makespan || math.Abs(got.AvgJCT-candidate.AvgJCT) > 1e-9*candidate.AvgJCT {
		t.Errorf("jobs --policy maifs-smoke@1 seed %d: avg JCT %v, makespan %v; the eval measured %v, %v",
			candidate.Seed, got.AvgJCT, got.Makespan, candidate.AvgJCT, candidate.Makespan)
	}
}
