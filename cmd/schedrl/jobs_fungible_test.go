package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedrl/schedrl/datasets"
	"github.com/schedrl/schedrl/fungible"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/internal/repotest"
)

func fungibleJobsOptions(policy string) *jobsOptions {
	return &jobsOptions{Cluster: "36:36:36", ServersGPUs: "8", Policy: policy, Round: 360, JSON: true,
		Throughputs: repotest.Data("gavel", "simulation_throughputs.json"),
		Fungible: fungibleOptions{Profiles: repotest.Data("synergy", "profiles.json"),
			Mapping: repotest.Data("fungible", "gavel_synergy_models.csv")}}
}

// Every fungible-world policy runs a generated workload; the same seed gives the same JCTs, and
// TUNE in LAS order differs from TUNE in FIFO order.
func TestRunJobsFungiblePolicies(t *testing.T) {
	run := func(policy, order string, seed uint64) fungibleSummary {
		t.Helper()
		opts := fungibleJobsOptions(policy)
		opts.Fungible.Generate, opts.Fungible.Order, opts.Seed = "jobs=60,lam=600,multigpu", order, seed
		opts.Cluster = "8:8:8" // busy, so that the order matters
		var out bytes.Buffer
		opts.Out = &out
		if err := runJobs(context.Background(), opts); err != nil {
			t.Fatalf("%s: %v", policy, err)
		}
		var s fungibleSummary
		if err := json.Unmarshal(out.Bytes(), &s); err != nil {
			t.Fatalf("%v\n%s", err, out.String())
		}
		if s.Jobs != 60 || len(s.JCT) != 60 || !(s.AvgJCT > 0) || !(s.P95JCT >= s.AvgJCT) || !(s.Utilization > 0 && s.Utilization <= 1) {
			t.Fatalf("%s: summary %+v", policy, s)
		}
		return s
	}
	rules := map[string]string{"synergy-tune": "synergy-tune", "gandiva": "gandiva", "integrated-greedy": "integrated-greedy",
		"max_min_fairness": "gavel-lp", "max_min_fairness_perf": "gavel-lp", "max_min_fairness_packed": "gavel-lp"}
	for _, p := range []string{"fifo", "sjf", "srtf", "tiresias-las", "max_min_fairness", "max_min_fairness_perf", "max_min_fairness_packed", "synergy-tune", "gandiva", "integrated-greedy"} {
		s := run(p, "", 1)
		if want := cmp.Or(rules[p], "fixed"); s.Rule != want {
			t.Errorf("%s: rule %s, want %s", p, s.Rule, want)
		}
	}
	// max_min_fairness_packed exists only in the fungible world: it needs no --servers-gpus.
	opts := fungibleJobsOptions("max-min-fairness-packed")
	opts.ServersGPUs, opts.Cluster, opts.Fungible.Generate = "", "4:4:4", "jobs=20,lam=600"
	var out bytes.Buffer
	opts.Out = &out
	if err := runJobs(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	var s fungibleSummary
	if err := json.Unmarshal(out.Bytes(), &s); err != nil || s.Order != "max_min_fairness_packed" || s.ServerGPUs != 8 || s.Jobs != 20 {
		t.Fatalf("packed without --servers-gpus: %v, %+v", err, s)
	}
	a, b := run("synergy-tune", "", 2), run("synergy-tune", "", 2)
	if a.AvgJCT != b.AvgJCT || a.Makespan != b.Makespan {
		t.Errorf("same seed: %g/%g and %g/%g", a.AvgJCT, a.Makespan, b.AvgJCT, b.Makespan)
	}
	if las := run("synergy-tune", "tiresias-las", 2); las.Order != "tiresias-las" || las.AvgJCT == a.AvgJCT {
		t.Errorf("TUNE in LAS order: %+v, same avg JCT %g as FIFO order", las.Order, las.AvgJCT)
	}
}

// A Gavel trace runs in the fungible world too.
func TestRunJobsFungibleTrace(t *testing.T) {
	opts := fungibleJobsOptions("gandiva")
	opts.Trace, opts.JSON = repotest.Data("gavel", "reference", "gen-8x3-lam3600-seed0.trace"), false
	opts.Cluster = "8:8:8"
	var out bytes.Buffer
	opts.Out = &out
	if err := runJobs(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "gandiva (rule gandiva, order fifo) on 8:8:8 in 8-GPU servers") {
		t.Errorf("output %q", out.String())
	}
}

func TestRunJobsFungibleBadInput(t *testing.T) {
	dir := t.TempDir()
	raw, err := os.ReadFile(repotest.Data("fungible", "gavel_synergy_models.csv"))
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "A3C,") {
			kept = append(kept, line)
		}
	}
	noA3C := filepath.Join(dir, "no-a3c.csv")
	if err := os.WriteFile(noA3C, []byte(strings.Join(kept, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	trace := repotest.Data("gavel", "reference", "gen-36x3-lam1200-seed0.trace")
	for want, set := range map[string]func(o *jobsOptions){
		`job type "A3C" has no Synergy mapping in ` + noA3C: func(o *jobsOptions) { o.Trace, o.Fungible.Mapping = trace, noA3C },
		`unknown field "n"`:                     func(o *jobsOptions) { o.Fungible.Generate = "n=5,lam=60" },
		`want jobs=N (N > 0) and lam=S`:         func(o *jobsOptions) { o.Fungible.Generate = "jobs=5" },
		`field lam: -3 s, want a finite number`: func(o *jobsOptions) { o.Fungible.Generate = "jobs=5,lam=-3" },
		`Gavel's LPs are policies of their own`: func(o *jobsOptions) { o.Trace, o.Policy, o.Fungible.Order = trace, "gandiva", "max_min_fairness_perf" },
		`one server size in GPUs`:               func(o *jobsOptions) { o.Trace, o.ServersGPUs = trace, "8:8:8" },
		`--trace or --generate, one of them`:    func(o *jobsOptions) {},
		`--order sets the job order of`:         func(o *jobsOptions) { o.Trace, o.Fungible.Order = trace, "srtf" },
		`unknown policy "lifo"`:                 func(o *jobsOptions) { o.Trace, o.Policy, o.Fungible.Order = trace, "gandiva", "lifo" },
		`field 2 (p100) is "x"`:                 func(o *jobsOptions) { o.Trace, o.Cluster = trace, "36:x:36" },
	} {
		opts := fungibleJobsOptions("synergy-tune")
		if strings.Contains(want, "--order sets") {
			opts.Policy = "fifo"
		}
		set(opts)
		opts.Out = &bytes.Buffer{}
		if err := runJobs(context.Background(), opts); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want %q", err, want)
		}
	}
}

// --generate feeds the GPU-type world too: Gavel's LP runs the same generated jobs.
func TestRunJobsGeneratedInTheGPUTypeWorld(t *testing.T) {
	opts := fungibleJobsOptions("max_min_fairness_perf")
	opts.ServersGPUs, opts.Cluster, opts.Fungible.Generate, opts.Seed = "", "8:8:8", "jobs=30,lam=600", 4
	var out bytes.Buffer
	opts.Out = &out
	if err := runJobs(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	var s jobsSummary
	if err := json.Unmarshal(out.Bytes(), &s); err != nil {
		t.Fatal(err)
	}
	if s.Trace != "generate:jobs=30,lam=600" || s.Jobs != 30 || len(s.JCT) != 30 || !(s.AvgJCT > 0) {
		t.Fatalf("summary %+v", s)
	}
}

// `schedrl jobs --servers-gpus 8 --log FILE` writes the fungible world's decision log: the same
// seed the same bytes, the header names the data files' digests, no server is over capacity at
// any round, and a run that fails writes nothing.
func TestRunJobsFungibleLog(t *testing.T) {
	dir := t.TempDir()
	write := func(name, policy, order string, seed uint64) ([]byte, error) {
		opts := fungibleJobsOptions(policy)
		opts.Cluster, opts.Fungible.Generate, opts.Fungible.Order, opts.Seed = "8:8:8", "jobs=30,lam=400,multigpu", order, seed
		opts.Openb.Log, opts.Out = filepath.Join(dir, name), &bytes.Buffer{}
		if err := runJobs(context.Background(), opts); err != nil {
			return nil, err
		}
		return os.ReadFile(opts.Openb.Log)
	}
	a, err := write("a.jsonl", "synergy-tune", "srtf", 3)
	if err != nil {
		t.Fatal(err)
	}
	b, err := write("b.jsonl", "synergy-tune", "srtf", 3)
	if err != nil || !bytes.Equal(a, b) {
		t.Fatalf("the same seed wrote different logs (%v)", err)
	}
	lg, err := fungible.ReadLog(bytes.NewReader(a))
	if err != nil {
		t.Fatal(err)
	}
	if err := lg.Check(); err != nil {
		t.Fatal(err)
	}
	h := lg.Header
	if h.Rule != "synergy-tune" || h.Order != "srtf" || h.Seed != 3 || len(h.Jobs) != 30 || len(h.Files) != 3 || len(h.Files[0].SHA256) != 64 {
		t.Fatalf("header %+v", h)
	}
	lp, err := write("lp.jsonl", "max_min_fairness_packed", "", 3)
	if err != nil {
		t.Fatal(err)
	}
	if lg, err := fungible.ReadLog(bytes.NewReader(lp)); err != nil || lg.Header.Rule != "max_min_fairness_packed" || lg.Header.Order != "" || lg.Check() != nil {
		t.Fatalf("LP log: %v", err)
	}
	if _, err := write("bad.jsonl", "synergy-tune", "lifo", 3); err == nil {
		t.Fatal("an unknown order ran")
	}
	if _, err := os.Stat(filepath.Join(dir, "bad.jsonl")); !os.IsNotExist(err) {
		t.Fatalf("a failed run left its log: %v", err)
	}
}

// `schedrl datasets build --env maifs` turns the logs of `schedrl jobs --servers-gpus 8 --log`
// into a multi-agent dataset with the maifs section: the validation seed's log is the val
// split; a bad maifs section is refused naming the key, before anything is written.
func TestDatasetsBuildMAIFSFromJobsLogs(t *testing.T) {
	logs := t.TempDir()
	for _, seed := range []uint64{1000, 900} {
		opts := fungibleJobsOptions("synergy-tune")
		opts.Cluster, opts.Fungible.Generate, opts.Fungible.Order, opts.Seed = "8:8:8", "jobs=30,lam=400,multigpu", "srtf", seed
		opts.Openb.Log, opts.Out = filepath.Join(logs, fmt.Sprintf("tune-seed%d.jsonl", seed)), &bytes.Buffer{}
		if err := runJobs(context.Background(), opts); err != nil {
			t.Fatal(err)
		}
	}
	cfg := config.Default()
	m := &cfg.MAIFS
	m.Cluster, m.Seeds, m.ValSeeds, m.HeldOut, m.Every = "8:8:8", "1000", "900", "49-50", 2
	m.Throughputs, m.Profiles, m.Mapping = repotest.Data("gavel", "simulation_throughputs.json"), repotest.Data("synergy", "profiles.json"),
		repotest.Data("fungible", "gavel_synergy_models.csv")
	cfg.Datasets.Env, cfg.Datasets.Logs, cfg.Datasets.Out = "maifs", filepath.Join(logs, "*.jsonl"), filepath.Join(t.TempDir(), "ds")
	if err := runDatasetsBuild(context.Background(), &datasetsBuildOptions{Config: cfg}); err != nil {
		t.Fatal(err)
	}
	man, err := datasets.ReadMAIFSManifest(cfg.Datasets.Out)
	if err != nil {
		t.Fatal(err)
	}
	if man.Splits[datasets.SplitTrain].Points == 0 || man.Splits[datasets.SplitVal].Points == 0 || man.Cluster != "8:8:8" {
		t.Fatalf("manifest %+v", man)
	}
	cfg.MAIFS.Every, cfg.Datasets.Out = 0, filepath.Join(t.TempDir(), "bad")
	if err := runDatasetsBuild(context.Background(), &datasetsBuildOptions{Config: cfg}); err == nil || !strings.Contains(err.Error(), "maifs.every") {
		t.Fatalf("maifs.every 0: %v", err)
	}
	if _, err := os.Stat(cfg.Datasets.Out); !os.IsNotExist(err) {
		t.Fatalf("a refused build wrote %s", cfg.Datasets.Out)
	}
}
