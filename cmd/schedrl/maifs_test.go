package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/eval"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/internal/repotest"
)

// maifsBC trains a small multi-agent checkpoint from TUNE's decisions and returns its directory.
func maifsBC(t *testing.T, extra func(*maifsOptions)) string {
	t.Helper()
	cfg := config.Default()
	cfg.Device.Name = "cpu"
	dir := filepath.Join(t.TempDir(), "bc")
	var out bytes.Buffer
	opts := &maifsOptions{Out: &out, Config: cfg, Cluster: "8:8:8", ServerGPUs: 8, Generate: []string{"jobs=30,lam=400,multigpu"},
		Seeds: "1000", ValSeeds: "900", Expert: "synergy-tune", Order: "srtf", Every: 2,
		Throughputs: repotest.Data("gavel", "simulation_throughputs.json"), Profiles: repotest.Data("synergy", "profiles.json"),
		Mapping: repotest.Data("fungible", "gavel_synergy_models.csv"), Env: env.MAIFSOptions{Window: 100, Partners: 2},
		Hidden: 16, Heads: 2, HeadHidden: 16, Epochs: 2, Batch: 8, LR: 1e-3, OrderWeight: 1, Seed: 1, Dir: dir, JSON: true}
	if extra != nil {
		extra(opts)
	}
	if err := runMAIFS(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	var s maifsSummary
	if err := json.Unmarshal(out.Bytes(), &s); err != nil || s.TrainPoints == 0 || s.ValPoints == 0 {
		t.Fatalf("summary %+v (%v)\n%s", s, err, out.String())
	}
	return dir
}

// maifs-bc through its Parquet dataset trains the same network as in process: the decision
// points read back are the ones written.
func TestMAIFSBCThroughTheDataset(t *testing.T) {
	ds := filepath.Join(t.TempDir(), "ds")
	direct, via := maifsBC(t, nil), maifsBC(t, func(o *maifsOptions) { o.Dataset = ds })
	a, err := os.ReadFile(filepath.Join(direct, "model.ot"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(via, "model.ot"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatal("training from the dataset gave other weights than training in process")
	}
	if _, err := os.Stat(filepath.Join(ds, "manifest.json")); err != nil {
		t.Fatal(err)
	}
}

// `schedrl jobs --policy ckpt:DIR` runs a behaviour-cloned multi-agent checkpoint in the
// fungible world like any baseline, with its decoder's statistics; the graph-free decoder
// counts conflicts; every job finishes.
func TestRunJobsMAIFSCheckpoint(t *testing.T) {
	dir := maifsBC(t, nil)
	for _, decode := range []string{"", "graph-free"} {
		opts := fungibleJobsOptions("ckpt:" + dir)
		opts.ServersGPUs = "" // a checkpoint policy alone selects the fungible world
		opts.Config = config.Default()
		opts.Config.Device.Name = "cpu"
		opts.Cluster, opts.Fungible.Generate, opts.Fungible.Decode, opts.Seed = "8:8:8", "jobs=40,lam=400,multigpu", decode, 49
		var out bytes.Buffer
		opts.Out = &out
		if err := runJobs(context.Background(), opts); err != nil {
			t.Fatal(err)
		}
		var s fungibleSummary
		if err := json.Unmarshal(out.Bytes(), &s); err != nil {
			t.Fatalf("%v\n%s", err, out.String())
		}
		if s.Rule != "maifs" || s.Jobs != 40 || len(s.JCT) != 40 || !(s.AvgJCT > 0) || s.MAIFS == nil || s.MAIFS.Decisions != s.Rounds {
			t.Fatalf("decode %q: summary %+v", decode, s)
		}
	}
}

// Bad references and decoders are named; a placement checkpoint is refused by kind.
func TestRunJobsMAIFSBadInput(t *testing.T) {
	for policy, want := range map[string]string{
		"ckpt:" + filepath.Join(t.TempDir(), "none"): "none",
	} {
		opts := fungibleJobsOptions(policy)
		opts.Config = config.Default()
		opts.Fungible.Generate = "jobs=5,lam=400,multigpu"
		opts.Out = &bytes.Buffer{}
		if err := runJobs(context.Background(), opts); err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("%s: %v, want an error naming %q", policy, err, want)
		}
	}
	opts := fungibleJobsOptions("synergy-tune")
	opts.Fungible.Generate, opts.Fungible.Decode, opts.Out = "jobs=5,lam=400,multigpu", "graph-free", &bytes.Buffer{}
	if err := runJobs(context.Background(), opts); err == nil || !strings.Contains(err.Error(), "--maifs-decode") {
		t.Fatalf("--maifs-decode with a baseline: %v", err)
	}
	opts = fungibleJobsOptions("ckpt:x")
	opts.Config = config.Default()
	opts.Fungible.Generate, opts.Fungible.Decode, opts.Out = "jobs=5,lam=400,multigpu", "sideways", &bytes.Buffer{}
	if err := runJobs(context.Background(), opts); err == nil || !strings.Contains(err.Error(), "sideways") {
		t.Fatalf("--maifs-decode sideways: %v", err)
	}
}

// `schedrl eval --timed fungible` runs multi-agent checkpoints (and the graph-free decoder)
// beside the baselines and Gavel's LPs, pairs them with the baseline on the same seeds on avg JCT
// and makespan, reports the graph-free conflicts, and measures the checkpoint exactly as
// `schedrl jobs --policy ckpt:DIR` does on the same seed.
func TestEvalTimedFungibleRunsCheckpoints(t *testing.T) {
	dir := maifsBC(t, nil)
	cfg := config.Default()
	cfg.Device.Name = "cpu"
	ec := &cfg.Eval
	ec.Timed.Kind, ec.Timed.Cluster, ec.Timed.ServersGPUs = "fungible", "8:8:8", "8"
	ec.Timed.Throughputs = repotest.Data("gavel", "simulation_throughputs.json")
	ec.Timed.Profiles = repotest.Data("synergy", "profiles.json")
	ec.Timed.SynergyMap = repotest.Data("fungible", "gavel_synergy_models.csv")
	ec.Policies = []string{"synergy-tune/srtf", "max_min_fairness_packed", "ckpt:" + dir, "ckpt:" + dir + "#graph-free"}
	ec.Baseline, ec.Seeds, ec.Parallelism = "synergy-tune/srtf", "49-50", 2
	ec.Traces = []string{"jobs=30,lam=400,multigpu", repotest.Data("gavel", "traces", "physical_cluster", "small_test.trace")}
	ec.Out = filepath.Join(t.TempDir(), "eval")
	var out bytes.Buffer
	if err := runEval(context.Background(), &evalOptions{Out: &out, Config: cfg}); err != nil {
		t.Fatal(err)
	}
	m, err := eval.ReadTimedMetrics(filepath.Join(ec.Out, "metrics.json"))
	if err != nil {
		t.Fatal(err)
	}
	ckpt := m.Find("ckpt:"+dir, "jobs=30,lam=400,multigpu")
	free := m.Find("ckpt:"+dir+"#graph-free", "jobs=30,lam=400,multigpu")
	if ckpt == nil || free == nil || len(ckpt.PerSeed) != 2 || ckpt.VsBaseline["makespan_s"] == nil || ckpt.VsBaseline["avg_jct_s"].Diff.N != 2 {
		t.Fatalf("checkpoint rows %+v, %+v", ckpt, free)
	}
	if s := ckpt.PerSeed[0].MAIFS; s == nil || s.Decisions != ckpt.PerSeed[0].Rounds {
		t.Errorf("decision statistics %+v over %d rounds", s, ckpt.PerSeed[0].Rounds)
	}
	md, _ := os.ReadFile(filepath.Join(ec.Out, "report.md"))
	if !strings.Contains(string(md), "conflicts/decision (graph-free)") || !strings.Contains(string(md), "Workload small_test") {
		t.Errorf("report.md:\n%s", md)
	}
	opts := fungibleJobsOptions("ckpt:" + dir)
	opts.Config = cfg
	opts.Cluster, opts.Fungible.Generate, opts.Seed = "8:8:8", "jobs=30,lam=400,multigpu", 49
	var js bytes.Buffer
	opts.Out = &js
	if err := runJobs(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	var s fungibleSummary
	if err := json.Unmarshal(js.Bytes(), &s); err != nil {
		t.Fatal(err)
	}
	if got := ckpt.PerSeed[0]; got.Makespan != s.Makespan || math.Abs(got.AvgJCT-s.AvgJCT) > 1e-9*s.AvgJCT {
		t.Errorf("eval seed 49: makespan %v, avg JCT %v; jobs: %v, %v", got.Makespan, got.AvgJCT, s.Makespan, s.AvgJCT)
	}
	ec.Policies = []string{"synergy-tune/srtf", "ckpt:" + dir + "#sideways"}
	ec.Out = filepath.Join(t.TempDir(), "bad")
	if err := runEval(context.Background(), &evalOptions{Out: &out, Config: cfg}); err == nil || !strings.Contains(err.Error(), `decoder "sideways"`) {
		t.Fatalf("a bad decoder: %v", err)
	}
}

// maifs-bc takes its world and workloads from the maifs section; a set flag overrides its key,
// and a flag that breaks the section's rules is refused by key.
func TestMAIFSBCFlagsOverrideConfig(t *testing.T) {
	cfgPath := writeFile(t, filepath.Join(t.TempDir(), "maifs.yaml"),
		"maifs:\n  cluster: \"8:8:8\"\n  generate: [\"jobs=20,lam=900\"]\n  seeds: \"1000-1001\"\n  every: 3\n  makespan_weight: 2\n")
	var got *maifsOptions
	cmd := newMAIFSCmd(func(_ context.Context, o *maifsOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--config", cfgPath, "--seeds", "1005", "--window", "50", "--label-smoothing", "0.05", "--out", "x"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.Smoothing != 0.05 || got.Config.MAIFS.LabelSmoothing != 0.05 || got.Cluster != "8:8:8" || got.Seeds != "1005" || got.Every != 3 || got.Env.Window != 50 || got.Env.Partners != 2 ||
		got.Env.MakespanWeight != 2 || got.ValSeeds != "900-902" || got.Expert != "synergy-tune" || len(got.Generate) != 1 ||
		got.Throughputs != filepath.Join("data", "gavel", "simulation_throughputs.json") || got.Config.MAIFS.Seeds != "1005" {
		t.Fatalf("options %+v", *got)
	}
	cmd = newMAIFSCmd(func(context.Context, *maifsOptions) error { return nil })
	cmd.SetArgs([]string{"--config", cfgPath, "--val-seeds", "50", "--out", "x"})
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "maifs.val_seeds: seed 50 is also in held_out_seeds") {
		t.Fatalf("held-out validation seed: %v", err)
	}
}
