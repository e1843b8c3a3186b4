package online

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/schedrl/schedrl/defrag"
	"github.com/schedrl/schedrl/sim"
	"github.com/schedrl/schedrl/sim/simtest"
	"github.com/schedrl/schedrl/tasks"
)

func TestPeriodicConfigScalesDRRsBudget(t *testing.T) {
	for _, c := range []struct {
		nodes         int
		every         float64
		budget, perHr int
	}{{64, 3600, 5, 5}, {32, 3600, 3, 3}, {1213, 3600, 95, 95}, {64, 600, 1, 5}, {1, 3600, 1, 1}} {
		cfg := PeriodicConfig(c.nodes, c.every)
		if cfg.Budget != c.budget || cfg.CapPerHour != c.perHr || cfg.Trigger != TriggerPeriodic || cfg.UtilThreshold != DRRUtilThreshold {
			t.Errorf("%d nodes every %v s: %+v, want budget %d, cap %d", c.nodes, c.every, cfg, c.budget, c.perHr)
		}
		if err := cfg.Validate(); err != nil {
			t.Error(err)
		}
	}
	for key, mutate := range map[string]func(*Config){
		"trigger":        func(c *Config) { c.Trigger = "hourly" },
		"util_threshold": func(c *Config) { c.UtilThreshold = 1.5 },
	} {
		c := PeriodicConfig(64, 3600)
		mutate(&c)
		if err := c.Validate(); err == nil || !strings.HasPrefix(err.Error(), key+":") {
			t.Errorf("%s: error %v", key, err)
		}
	}
}

// subTimeline is 3 h of the default pod list on a 64-node sample at load (the first hour
// unmeasured).
func subTimeline(t *testing.T, load float64) Timeline {
	t.Helper()
	nodes, trace, model := simtest.OpenbTrace(t, "default")
	return Timeline{Nodes: SubCluster(nodes, 64, 7), Trace: trace, Model: model, Load: load, Seed: 7,
		Duration: 3 * 3600, Warmup: 3600, Cap: 3600, Placer: "fgd", Queue: "backfill"}
}

// overThreshold wraps a planner and counts the planned migrations off nodes at or over the
// threshold's GPU allocation.
type overThreshold struct {
	Planner
	threshold     float64
	planned, over int
}

func (o *overThreshold) Plan(s Snapshot, budget int, rng *rand.Rand) ([]defrag.Migration, error) {
	ms, err := o.Planner.Plan(s, budget, rng)
	for _, m := range ms {
		n, _ := s.Cluster.NodeIndex(m.FromNode)
		f := s.Cluster.Free(n)
		if 1-float64(f.TotalGPU())/float64(f.GPUs*sim.MilliPerGPU) >= o.threshold {
			o.over++
		}
	}
	o.planned += len(ms)
	return ms, err
}

// The periodic trigger acts at every check whatever the queue (at load 0.5 the queue trigger
// never does), and moves tasks only off nodes under the utilisation threshold.
func TestPeriodicTriggerActsWhateverTheQueue(t *testing.T) {
	tl := subTimeline(t, 0.5)
	run := func(cfg Config, p Planner) (*tasks.Result, *Defragmenter) {
		w, err := tl.Build()
		if err != nil {
			t.Fatal(err)
		}
		d, err := New(cfg, p, w.Placer, tl.Seed)
		if err != nil {
			t.Fatal(err)
		}
		r, err := w.Run(tl, d, 0)
		if err != nil {
			t.Fatal(err)
		}
		return r, d
	}
	greedy, _ := NewPlanner("greedy")
	queue := DefaultConfig()
	if r, d := run(queue, greedy); d.Invocations != 0 || r.Migrations != 0 {
		t.Errorf("queue trigger at load 0.5: %d invocations, %d migrations", d.Invocations, r.Migrations)
	}
	cfg := PeriodicConfig(64, 1800)
	cfg.Budget = 20
	p := &overThreshold{Planner: greedy, threshold: cfg.UtilThreshold}
	r, d := run(cfg, p)
	if d.Invocations < 5 || p.planned == 0 {
		t.Fatalf("periodic: %d invocations, %d planned", d.Invocations, p.planned)
	}
	if r.Migrations > p.planned-p.over || d.Skipped < p.over {
		t.Errorf("%d planned, %d off nodes over the threshold; %d started, %d skipped", p.planned, p.over, r.Migrations, d.Skipped)
	}
}

// fragWatch checks that each oracle invocation leaves the fragment no higher than it found it.
type fragWatch struct {
	t *testing.T
	o *Oracle
}

func (f fragWatch) Invoke(v *tasks.View) (float64, error) {
	before := v.Cluster().ClusterFrag()
	next, err := f.o.Invoke(v)
	if after := v.Cluster().ClusterFrag(); after > before {
		f.t.Errorf("at %v s the oracle raised the fragment from %v to %v", v.Now(), before, after)
	}
	return next, err
}

func TestOracleRepacksToLessFragment(t *testing.T) {
	tl := subTimeline(t, 0.9)
	w, err := tl.Build()
	if err != nil {
		t.Fatal(err)
	}
	base, err := w.Run(tl, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if w, err = tl.Build(); err != nil {
		t.Fatal(err)
	}
	o, err := NewOracle(600, tl.Seed)
	if err != nil {
		t.Fatal(err)
	}
	r, err := w.Run(tl, fragWatch{t, o}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if o.Repacks == 0 || r.Migrations == 0 || r.DowntimeS != 0 {
		t.Errorf("%d repacks, %d tasks moved, %v s downtime", o.Repacks, r.Migrations, r.DowntimeS)
	}
	if len(r.Measured()) != len(base.Measured()) {
		t.Errorf("%d tasks measured, without the oracle %d", len(r.Measured()), len(base.Measured()))
	}
}
