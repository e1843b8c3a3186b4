package main

import (
	"bytes"
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/schedrl/schedrl/eval"
	"github.com/schedrl/schedrl/internal/repotest"
)

// The timed flags land in eval.timed; the shared ones keep their keys.
func TestEvalTimedFlagsFillOptions(t *testing.T) {
	var got *evalOptions
	cmd := newEvalCmd(func(_ context.Context, o *evalOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--timed", "fungible", "--policies", "fifo,synergy-tune/srtf", "--generate", "jobs=20,lam=300,multigpu",
		"--cluster", "8:8:8", "--servers-gpus", "4", "--round", "120", "--seeds", "3-4", "--out", t.TempDir() + "/r"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	tc := got.Config.Eval.Timed
	if tc.Kind != "fungible" || tc.Cluster != "8:8:8" || tc.ServersGPUs != "4" || tc.Round != 120 || tc.Queue != "backfill" ||
		!slices.Equal(got.Config.Eval.Policies, []string{"fifo", "synergy-tune/srtf"}) || got.Config.Eval.Seeds != "3-4" ||
		!slices.Equal(got.Config.Eval.Traces, []string{"jobs=20,lam=300,multigpu"}) {
		t.Fatalf("eval config %+v", got.Config.Eval)
	}
}

func TestRunEvalTimedJobs(t *testing.T) {
	out := filepath.Join(t.TempDir(), "report")
	cmd := newEvalCmd(nil)
	var stdout bytes.Buffer
	cmd.SetOut(&stdout)
	cmd.SetArgs([]string{"--timed", "jobs", "--policies", "fifo,srtf", "--traces", repotest.Data("gavel", "reference", "gen-8x3-lam3600-seed0.trace"), "--generate", "jobs=30,lam=300,multigpu",
		"--cluster", "8:8:8", "--seeds", "1-2", "--out", out,
		"--set", "eval.timed.throughputs=" + repotest.Data("gavel", "simulation_throughputs.json"),
		"--set", "eval.timed.profiles=" + repotest.Data("synergy", "profiles.json"),
		"--set", "eval.timed.synergy_map=" + repotest.Data("fungible", "gavel_synergy_models.csv")})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	// The trace file runs once, the generated workload on both seeds: 2 policies x 3 runs.
	if !strings.Contains(stdout.String(), "report: "+out+"/report.html (6 runs in") {
		t.Errorf("stdout %q", stdout.String())
	}
	m, err := eval.ReadTimedMetrics(filepath.Join(out, "metrics.json"))
	if err != nil {
		t.Fatal(err)
	}
	if r := m.Find("srtf", "jobs=30,lam=300,multigpu"); r == nil || r.VsBaseline["avg_jct_s"] == nil || r.AvgJCT.N != 2 ||
		m.Find("fifo", "gen-8x3-lam3600-seed0").AvgJCT.N != 1 {
		t.Fatalf("metrics %+v", m.Results)
	}
}
