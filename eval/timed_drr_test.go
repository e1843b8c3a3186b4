package eval

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedrl/schedrl/defrag/online"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/policy"
	"github.com/schedrl/schedrl/sim"
)

// drrConfig is the drr kind on 16-node sub-clusters of the small cluster; fgdCheckpoint
// resolves every checkpoint to FGD's placer, so "ckpt:DIR" is FGD placing with DRR's periodic
// greedy rescheduling.
func drrConfig(t *testing.T) (config.EvalConfig, Options) {
	t.Helper()
	nodes, pods := smallCluster(t)
	cfg := timedConfig(t, online.DRREnvName)
	cfg.Nodes, cfg.TracesDir, cfg.Traces = nodes, filepath.Dir(pods), []string{"small"}
	cfg.Policies = []string{"fgd", "bestfit", "ckpt:" + t.TempDir()}
	cfg.Seeds, cfg.Timed.Load, cfg.Timed.SampleNodes, cfg.Timed.SeriesStep = "1-3", 0.9, 16, 60
	sec := onlineSection()
	sec.Duration, sec.Warmup, sec.Cap = 4*3600, 3600, 3600
	fgdCheckpoint := func(PolicyRef) (PolicyFactory, error) {
		return func() (sim.Placer, error) { return policy.NewPlacer("fgd") }, nil
	}
	return cfg, Options{Log: quiet, DefragOnline: sec, Resolve: fgdCheckpoint}
}

// The drr kind reports every run's time-averaged fragmentation rate, paired with the baseline
// and read by the gate; a heuristic's run is the online world's timeline on the seed's
// sub-cluster with no rescheduling, and only a checkpoint reschedules (it does).
func TestRunTimedDRR(t *testing.T) {
	cfg, opts := drrConfig(t)
	m, err := RunTimed(context.Background(), cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	checkTimedOutputs(t, cfg, m)
	scores, err := m.Score(fragRatioKey)
	if err != nil {
		t.Fatal(err)
	}
	migrated := 0
	for _, r := range m.Results {
		if r.FragRatioMeanPct == nil || len(scores[r.Policy]["small"]) != 3 {
			t.Fatalf("%s: rate %v, scores %v", r.Policy, r.FragRatioMeanPct, scores[r.Policy])
		}
		if r.Policy != "fgd" && r.VsBaseline[fragRatioKey] == nil {
			t.Errorf("%s: no %s paired with fgd", r.Policy, fragRatioKey)
		}
		for _, run := range r.PerSeed {
			if learned := strings.HasPrefix(r.Policy, "ckpt:"); !learned && run.Migrations != 0 {
				t.Errorf("%s seed %d: %d migrations, and a heuristic places alone", r.Policy, run.Seed, run.Migrations)
			}
			migrated += run.Migrations
		}
	}
	if migrated == 0 {
		t.Error("the checkpoint never rescheduled: DRR's greedy periodic rescheduling did not run")
	}
	nodes, err := sim.LoadNodes(cfg.Nodes)
	if err != nil {
		t.Fatal(err)
	}
	trace, err := sim.LoadTasks(filepath.Join(cfg.TracesDir, "openb_pod_list_small.csv"))
	if err != nil {
		t.Fatal(err)
	}
	model, err := sim.TypicalShapes(trace, typicalCoverage)
	if err != nil {
		t.Fatal(err)
	}
	fgd := m.Find("fgd", "small")
	for i, run := range fgd.PerSeed {
		tl := online.TimelineOf(*opts.DefragOnline, online.SubCluster(nodes, 16, run.Seed), trace, model, cfg.Timed.Load, run.Seed)
		w, err := tl.Build()
		if err != nil {
			t.Fatal(err)
		}
		res, err := w.Run(tl, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := *run.FragRatioMeanPct; got != res.FragRatioMeanPct || scores["fgd"]["small"][i] != got {
			t.Errorf("fgd seed %d: rate %v, the online world's timeline %v", run.Seed, got, res.FragRatioMeanPct)
		}
	}
}

// An unknown placer, a checkpoint without a resolver, a missing defrag_online section, a load
// out of range or a negative sub-cluster size is refused before any run, naming it; nothing
// is written.
func TestRunTimedDRRBadInput(t *testing.T) {
	for _, c := range []struct {
		want string
		set  func(*config.EvalConfig, *Options)
	}{
		{`policy "no-such-placer"`, func(c *config.EvalConfig, _ *Options) { c.Policies = []string{"fgd", "no-such-placer"} }},
		{`policy "drr@champion"`, func(c *config.EvalConfig, o *Options) { c.Policies, o.Resolve = []string{"fgd", "drr@champion"}, nil }},
		{"defrag_online section", func(_ *config.EvalConfig, o *Options) { o.DefragOnline = nil }},
		{"defrag_online.warmup_s", func(_ *config.EvalConfig, o *Options) { o.DefragOnline.Warmup = -1 }},
		{"timed.load", func(c *config.EvalConfig, _ *Options) { c.Timed.Load = 0 }},
		{"timed.sample_nodes", func(c *config.EvalConfig, _ *Options) { c.Timed.SampleNodes = -1 }},
	} {
		cfg, opts := drrConfig(t)
		c.set(&cfg, &opts)
		if _, err := RunTimed(context.Background(), cfg, opts); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("err = %v, want one naming %s", err, c.want)
		}
		if _, err := os.Stat(cfg.Out); !os.IsNotExist(err) {
			t.Errorf("%s: output written: %v", c.want, err)
		}
	}
}
