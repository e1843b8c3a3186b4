package eval

import (
	"context"
	"encoding/csv"
	"fmt"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/schedrl/schedrl/fungible"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/internal/repotest"
)

// timedConfig is a small timed eval of kind on the vendored Gavel and Synergy tables.
func timedConfig(t *testing.T, kind string) config.EvalConfig {
	t.Helper()
	var c config.EvalConfig
	c.SetDefaults()
	c.Timed.Kind = kind
	c.Timed.Cluster = "8:8:8"
	c.Timed.Throughputs = repotest.Data("gavel", "simulation_throughputs.json")
	c.Timed.Profiles = repotest.Data("synergy", "profiles.json")
	c.Timed.SynergyMap = repotest.Data("fungible", "gavel_synergy_models.csv")
	c.Traces = []string{"jobs=40,lam=300,multigpu", handGavelTrace(t)}
	c.Seeds = "1-3"
	c.Out = filepath.Join(t.TempDir(), "report")
	return c
}

// handGavelTrace writes eight jobs of Gavel's 10-field form, a few on several GPUs.
func handGavelTrace(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for i := range 8 {
		model, steps, scale := "ResNet-18 (batch size 64)", 20000+5000*i, 1
		if i%3 == 1 {
			model, scale = "ResNet-50 (batch size 64)", 2
		}
		fmt.Fprintf(&b, "%s\tcmd\tdir\t--num_steps\t1\t%d\t%d\t1\t-1.000000\t%d.000000\n", model, steps, scale, 200*i)
	}
	path := filepath.Join(t.TempDir(), "hand.trace")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// checkTimedOutputs asserts every output of a timed report: metrics.json with each measure, the
// CSVs with a row per job and per sample, decodable PNGs and a report that shows each figure.
func checkTimedOutputs(t *testing.T, cfg config.EvalConfig, m *TimedMetrics) {
	t.Helper()
	read, err := ReadTimedMetrics(filepath.Join(cfg.Out, "metrics.json"))
	if err != nil {
		t.Fatal(err)
	}
	if read.Kind != cfg.Timed.Kind || len(read.Results) != len(m.Policies)*len(m.Workloads) || read.Baseline != m.Policies[0] {
		t.Fatalf("metrics.json: kind %q, %d results, baseline %q", read.Kind, len(read.Results), read.Baseline)
	}
	jctRows, seriesRows := 1, 1
	for _, r := range read.Results {
		// A trace file under the jobs worlds is one workload whatever the seed: it runs once.
		want := 3
		if r.Workload == "hand" {
			want = 1
		}
		if len(r.PerSeed) != want || r.AvgJCT.N != want {
			t.Fatalf("%s on %s: %d seeds, want %d", r.Policy, r.Workload, len(r.PerSeed), want)
		}
		for _, s := range r.PerSeed {
			if s.Jobs == 0 || !(s.AvgJCT > 0) || s.P50JCT > s.P95JCT || s.P95JCT > s.P99JCT || !(s.Makespan > 0) ||
				!(s.Utilization > 0 && s.Utilization <= 1) || !(s.AllocGPUMeanPct > 0 && s.AllocGPUMeanPct <= 100) || s.QueueLenMean < 0 {
				t.Errorf("%s on %s seed %d: implausible %+v", r.Policy, r.Workload, s.Seed, s)
			}
		}
		if (r.Policy == read.Baseline) != (r.VsBaseline == nil) {
			t.Errorf("%s on %s: paired %v with baseline %s", r.Policy, r.Workload, r.VsBaseline, read.Baseline)
		}
		if p := r.VsBaseline["avg_jct_s"]; p != nil {
			base := read.Find(read.Baseline, r.Workload)
			if want := r.AvgJCT.Mean - base.AvgJCT.Mean; p.Diff.N != len(r.PerSeed) || p.Diff.Mean-want > 1e-6 || want-p.Diff.Mean > 1e-6 {
				t.Errorf("%s on %s: paired avg JCT %+v, want a mean of %v", r.Policy, r.Workload, p.Diff, want)
			}
		}
	}
	for _, r := range m.Results {
		for _, s := range r.PerSeed {
			jctRows += len(s.JCT)
			seriesRows += len(s.Series)
			if len(s.JCT) != s.Jobs || len(s.Series) == 0 {
				t.Errorf("%s on %s seed %d: %d JCTs for %d jobs, %d samples", r.Policy, r.Workload, s.Seed, len(s.JCT), s.Jobs, len(s.Series))
			}
		}
	}
	for name, want := range map[string]int{timedJCTFile: jctRows, timedSeriesCSV: seriesRows} {
		f, err := os.Open(filepath.Join(cfg.Out, name))
		if err != nil {
			t.Fatal(err)
		}
		rows, err := csv.NewReader(f).ReadAll()
		f.Close()
		if err != nil || len(rows) != want {
			t.Errorf("%s: %d rows (%v), want %d", name, len(rows), err, want)
		}
	}
	md, _ := os.ReadFile(filepath.Join(cfg.Out, "report.md"))
	page, _ := os.ReadFile(filepath.Join(cfg.Out, "report.html"))
	figures := 0
	for _, wl := range m.Workloads {
		for _, name := range timedFigureNames(wl) {
			figures++
			f, err := os.Open(filepath.Join(cfg.Out, name))
			if err != nil {
				t.Fatal(err)
			}
			img, err := png.Decode(f)
			f.Close()
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if b := img.Bounds(); b.Dx() < 600 || b.Dy() < 300 {
				t.Errorf("%s is only %v", name, b)
			}
			if !strings.Contains(string(md), "]("+name+")") {
				t.Errorf("report.md does not show %s", name)
			}
		}
		if !strings.Contains(string(md), "## Workload "+wl) {
			t.Errorf("report.md has no section for %s", wl)
		}
	}
	if n := strings.Count(string(page), "data:image/png;base64,"); n != figures {
		t.Errorf("report.html inlines %d images, want %d", n, figures)
	}
	if !strings.Contains(string(md), "Against "+read.Baseline+" on the same seeds") {
		t.Errorf("report.md has no paired comparison:\n%s", md)
	}
}

func TestRunTimedJobsWritesEveryOutput(t *testing.T) {
	cfg := timedConfig(t, "jobs")
	cfg.Policies = []string{"fifo", "srtf", "max_min_fairness_perf"}
	m, err := RunTimed(context.Background(), cfg, Options{Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(m.Workloads, []string{"jobs=40,lam=300,multigpu", "hand"}) {
		t.Fatalf("workloads %v", m.Workloads)
	}
	checkTimedOutputs(t, cfg, m)
	if m.Runs() != 3*(3+1) {
		t.Errorf("%d runs, want 12: the generated workload on 3 seeds, the trace file once, for 3 policies", m.Runs())
	}
	md, _ := os.ReadFile(filepath.Join(cfg.Out, "report.md"))
	if !strings.Contains(string(md), "hand ran once, on seed 1") {
		t.Errorf("report.md does not say the trace file ran once:\n%s", md)
	}
	// One run has no interval: its row shows means only.
	hand := string(md)[strings.Index(string(md), "## Workload hand"):]
	if row := hand[strings.Index(hand, "| srtf |"):]; strings.Contains(row[:strings.Index(row, "\n")], "±") {
		t.Errorf("one run shown with an interval: %s", row[:strings.Index(row, "\n")])
	}
	// A generated workload differs by seed; a trace file runs once, on the first seed, and a
	// paired difference on one run shows nothing.
	gen, file := m.Find("fifo", m.Workloads[0]), m.Find("srtf", "hand")
	if gen.PerSeed[0].AvgJCT == gen.PerSeed[1].AvgJCT || file.PerSeed[0].Seed != 1 || file.PerSeed[0].Jobs != 8 ||
		file.VsBaseline["avg_jct_s"].Verdict() != "no difference shown" {
		t.Errorf("generated %v / %v, file %+v", gen.PerSeed[0].AvgJCT, gen.PerSeed[1].AvgJCT, file)
	}
	// SRTF is known to beat FIFO on mean JCT when jobs queue; on 24 GPUs with 40 arrivals every
	// 300 s they do.
	srtf := m.Find("srtf", m.Workloads[0])
	if d := srtf.VsBaseline["avg_jct_s"]; d.Diff.Mean >= 0 {
		t.Errorf("srtf vs fifo avg JCT %+v, want lower", d.Diff)
	}
}

func TestRunTimedFungibleWritesEveryOutput(t *testing.T) {
	cfg := timedConfig(t, "fungible")
	cfg.Timed.ServersGPUs = "8"
	cfg.Policies = []string{"fifo", "synergy-tune/srtf", "gandiva", "max_min_fairness_packed"}
	m, err := RunTimed(context.Background(), cfg, Options{Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	checkTimedOutputs(t, cfg, m)
	if !strings.Contains(m.Cluster, "8-GPU servers") {
		t.Errorf("cluster %q", m.Cluster)
	}
	md, _ := os.ReadFile(filepath.Join(cfg.Out, "report.md"))
	if !strings.Contains(string(md), "Δ avg JCT, % of the baseline's") || strings.Contains(string(md), "conflicts/decision") {
		t.Errorf("report.md: no %% differences, or a conflicts column without a multi-agent policy:\n%s", md)
	}
}

// Gavel's LPs and the Sia-style optimiser run in the fungible world as round policies: the
// eval's numbers are those of fungible.Run with the policy, seed by seed.
func TestRunTimedFungibleRunsGavelsLPs(t *testing.T) {
	cfg := timedConfig(t, "fungible")
	cfg.Timed.ServersGPUs = "8"
	cfg.Traces = cfg.Traces[:1]
	cfg.Policies = []string{"max_min_fairness", "max-min-fairness-perf", "sia"}
	m, err := RunTimed(context.Background(), cfg, Options{Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	model, err := fungible.LoadModel(timedWorldSpec(cfg.Timed, 8), "timed.")
	if err != nil {
		t.Fatal(err)
	}
	cluster, err := fungible.NewMixCluster(cfg.Timed.Cluster, 8)
	if err != nil {
		t.Fatal(err)
	}
	w, err := fungibleKind{}.prepare(cfg, m.Seeds, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"max_min_fairness", "max_min_fairness_perf", "sia"} {
		lp, err := fungible.NewRoundPolicy(name)
		if err != nil {
			t.Fatal(err)
		}
		res, err := fungible.Run(cluster, model, w.(*fungibleWorld).work[0][0], fungible.RunConfig{Policy: lp, Round: cfg.Timed.Round})
		if err != nil {
			t.Fatal(err)
		}
		pol := strings.ReplaceAll(name, "max_min_fairness_perf", "max-min-fairness-perf")
		if got := m.Find(pol, m.Workloads[0]).PerSeed[0]; !reflect.DeepEqual(got.JCT, res.JCT) || got.Makespan != res.Makespan {
			t.Errorf("%s: eval avg JCT %v, makespan %v; fungible.Run %v, %v", name, got.AvgJCT, got.Makespan, res.AvgJCT, res.Makespan)
		}
	}
}

func TestRunTimedTasksWritesEveryOutput(t *testing.T) {
	nodes, pods := smallCluster(t)
	cfg := timedConfig(t, "tasks")
	cfg.Nodes, cfg.TracesDir, cfg.Traces = nodes, filepath.Dir(pods), []string{"small"}
	cfg.Policies = []string{"fgd", "bestfit", "random"}
	cfg.Timed.Load, cfg.Timed.Tasks, cfg.Timed.SeriesStep, cfg.Timed.Warmup = 1.2, 400, 5, 10
	m, err := RunTimed(context.Background(), cfg, Options{Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	checkTimedOutputs(t, cfg, m)
	r := m.Find("bestfit", "small")
	if _, ok := r.QueueDelay["multi-gpu"]; !ok || r.QueueDelay["all"].N != 3 {
		t.Errorf("queueing delay by kind %+v", r.QueueDelay)
	}
	base := m.Find("fgd", "small")
	if p := r.VsBaseline[gpuDelayKey]; p == nil || p.Diff.N != 3 || math.Abs(p.Diff.Mean-(r.QueueDelay["gpu"].Mean-base.QueueDelay["gpu"].Mean)) > 1e-9 {
		t.Errorf("paired GPU queueing delay %+v", p)
	}
	md, _ := os.ReadFile(filepath.Join(cfg.Out, "report.md"))
	if !strings.Contains(string(md), "queueing delay s: all / gpu / multi-gpu") {
		t.Errorf("report.md has no queueing delays:\n%s", md)
	}
}

// Same seeds, same numbers, however many workers run them.
func TestRunTimedDeterministicAcrossParallelism(t *testing.T) {
	var got [2]*TimedMetrics
	for i, workers := range []int{1, 3} {
		cfg := timedConfig(t, "jobs")
		cfg.Policies, cfg.Parallelism = []string{"fifo", "tiresias-las"}, workers
		cfg.Traces = cfg.Traces[:1]
		m, err := RunTimed(context.Background(), cfg, Options{Log: quiet})
		if err != nil {
			t.Fatal(err)
		}
		m.WallSeconds = 0
		for r := range m.Results {
			for s := range m.Results[r].PerSeed {
				m.Results[r].PerSeed[s].WallSeconds = 0
			}
		}
		got[i] = m
	}
	if !reflect.DeepEqual(got[0], got[1]) {
		t.Error("one worker and three workers give different metrics")
	}
}

func TestRunTimedBadInputNamesTheKey(t *testing.T) {
	for _, tc := range []struct {
		name, kind string
		edit       func(*config.EvalConfig)
		want       string
	}{
		{"malformed cluster", "jobs", func(c *config.EvalConfig) { c.Timed.Cluster = "4:4" }, "timed.cluster: cluster \"4:4\""},
		{"unknown policy", "jobs", func(c *config.EvalConfig) { c.Policies = []string{"fifo", "fastest"} }, `policies[1]: unknown policy "fastest"`},
		{"policy twice", "jobs", func(c *config.EvalConfig) { c.Policies = []string{"fifo", "fifo "} }, `policies[1]: "fifo" is listed twice`},
		{"bad spec", "jobs", func(c *config.EvalConfig) { c.Traces = []string{"jobs=10,lambda=5"} }, `traces[0]: "jobs=10,lambda=5": unknown field "lambda"`},
		{"missing trace", "jobs", func(c *config.EvalConfig) { c.Traces = []string{"no/such.trace"} }, "traces[0]: open no/such.trace"},
		{"missing table", "jobs", func(c *config.EvalConfig) { c.Timed.Throughputs = "nope.json" }, "timed.throughputs:"},
		{"unknown baseline", "jobs", func(c *config.EvalConfig) { c.Baseline = "srtf" }, `baseline: "srtf" is not one of the policies`},
		{"server sizes", "jobs", func(c *config.EvalConfig) { c.Timed.ServersGPUs = "4:4" }, `timed.servers_gpus: servers-gpus "4:4"`},
		{"server size", "fungible", func(c *config.EvalConfig) { c.Timed.ServersGPUs = "4:4:4" }, "timed.servers_gpus:"},
		{"unknown rule", "fungible", func(c *config.EvalConfig) { c.Policies = []string{"tune/srtf"} }, `policies[0]: "tune/srtf": unknown allocation rule "tune"`},
		{"unknown LP", "fungible", func(c *config.EvalConfig) { c.Policies = []string{"max_min_fairness_fast"} }, `policies[0]: "max_min_fairness_fast": unknown round policy`},
		{"decoder of a baseline", "fungible", func(c *config.EvalConfig) { c.Policies = []string{"srtf#graph-free"} }, `policies[0]: "srtf#graph-free": #graph-free sets a multi-agent checkpoint's decoder`},
		{"missing checkpoint", "fungible", func(c *config.EvalConfig) { c.Policies = []string{"fifo", "ckpt:no/such/dir"} }, `policies[1]: policy "ckpt:no/such/dir": checkpoint`},
		{"checkpoint without a resolver", "fungible", func(c *config.EvalConfig) { c.Policies = []string{"ckpt:" + t.TempDir()} }, "need a resolver that loads networks"},
		{"unknown order", "fungible", func(c *config.EvalConfig) { c.Policies = []string{"gandiva/lifo"} }, `policies[0]: "gandiva/lifo": order: unknown policy "lifo"`},
		{"unknown queue", "tasks", func(c *config.EvalConfig) { c.Timed.Queue = "lifo" }, `timed.queue: unknown queue discipline "lifo"`},
		{"warm-up past the arrivals", "tasks", func(c *config.EvalConfig) { c.Timed.Tasks, c.Timed.Warmup = 50, 14400 }, "timed.warmup: 14400 s is not before the last arrival"},
		{"unknown placer", "tasks", func(c *config.EvalConfig) { c.Policies = []string{"fgd", "fastest"} }, `policy "fastest"`},
		{"zero round", "jobs", func(c *config.EvalConfig) { c.Timed.Round = 0 }, "timed.round:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := timedConfig(t, tc.kind)
			cfg.Policies = []string{"fifo"}
			if tc.kind == "tasks" {
				nodes, pods := smallCluster(t)
				cfg.Nodes, cfg.TracesDir, cfg.Traces, cfg.Policies = nodes, filepath.Dir(pods), []string{"small"}, []string{"fgd"}
				cfg.Timed.Tasks, cfg.Timed.Warmup = 400, 0
			}
			tc.edit(&cfg)
			_, err := RunTimed(context.Background(), cfg, Options{Log: quiet})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("RunTimed: %v, want an error with %q", err, tc.want)
			}
			if _, err := os.Stat(cfg.Out); !os.IsNotExist(err) {
				t.Errorf("%s was written", cfg.Out)
			}
		})
	}
}

func TestRunRefusesATimedConfig(t *testing.T) {
	cfg := timedConfig(t, "jobs")
	if _, err := Run(context.Background(), cfg, Options{Log: quiet}); err == nil || !strings.Contains(err.Error(), "RunTimed") {
		t.Fatalf("Run with timed.kind: %v", err)
	}
}

func TestTimeMeanHoldsEachSample(t *testing.T) {
	s := []TimedPoint{{Time: 0, Waiting: 4}, {Time: 10, Waiting: 2}, {Time: 40, Waiting: 6}}
	wait := func(p TimedPoint) float64 { return float64(p.Waiting) }
	// 4 for 10 s, 2 for 30 s, 6 for 10 s over 50 s.
	if got := timeMean(s, 0, 50, 0, wait); got != (40+60+60)/50.0 {
		t.Errorf("timeMean = %v", got)
	}
	// Held at most 5 s: 4 for 5 s, 2 for 5 s, 6 for 5 s.
	if got := timeMean(s, 0, 50, 5, wait); got != (20+10+30)/50.0 {
		t.Errorf("timeMean with hold 5 = %v", got)
	}
	if got := fileName("jobs=300,lam=1200"); got != "jobs-300_lam-1200" {
		t.Errorf("fileName = %q", got)
	}
}

// A timed kind finds its learned resolver under its own name in Options.Learned: the fungible
// world hands its registry reference to the FungibleResolver there (whose error comes back), refuses it
// without one, and a resolver of another kind's type under its name is a programming error.
func TestLearnedResolverByKind(t *testing.T) {
	cfg := timedConfig(t, FungibleKind)
	cfg.Timed.ServersGPUs = "8"
	cfg.Policies = []string{"fifo", "m@champion"}
	refuse := FungibleResolver(func(ref PolicyRef, _ string, _ fungible.Cluster, _ fungible.SpeedModel) (FungibleFactory, error) {
		return nil, fmt.Errorf("resolver saw %s", ref.Raw)
	})
	_, err := RunTimed(context.Background(), cfg, Options{Log: quiet, Learned: Learned{FungibleKind: refuse}})
	if err == nil || !strings.Contains(err.Error(), "resolver saw m@champion") {
		t.Fatalf("with a resolver: %v", err)
	}
	_, err = RunTimed(context.Background(), cfg, Options{Log: quiet})
	if err == nil || !strings.Contains(err.Error(), "need a resolver that loads networks") {
		t.Fatalf("without one: %v", err)
	}
	defer func() {
		if r, _ := recover().(string); !strings.Contains(r, `Learned["fungible"]`) {
			t.Fatalf("a DefragResolver under fungible: recover() = %q", r)
		}
	}()
	_, _ = RunTimed(context.Background(), cfg, Options{Log: quiet, Learned: Learned{FungibleKind: DefragResolver(nil)}})
}
