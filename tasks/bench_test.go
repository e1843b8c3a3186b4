package tasks

import (
	"testing"

	"github.com/schedrl/schedrl/internal/repotest"
	"github.com/schedrl/schedrl/policy"
	"github.com/schedrl/schedrl/sim"
)

// openbSetup loads the 1,213-node cluster, or its first nodes when nodes > 0 (typical shapes of
// the default trace, seeded tie order), and a Poisson workload of n default-trace tasks at load
// rho, capped at 4 h.
func openbSetup(tb testing.TB, nodes, n int, rho float64, seed uint64) (*sim.Cluster, *Workload) {
	tb.Helper()
	all, err := sim.LoadNodes(repotest.OpenbNodes())
	if err != nil {
		tb.Fatal(err)
	}
	if nodes > 0 {
		all = all[:nodes]
	}
	trace, err := sim.LoadTasks(repotest.OpenbPods("default"))
	if err != nil {
		tb.Fatal(err)
	}
	model, err := sim.TypicalShapes(trace, 0.95)
	if err != nil {
		tb.Fatal(err)
	}
	c, err := sim.NewCluster(all, model)
	if err != nil {
		tb.Fatal(err)
	}
	if err := c.SetTieOrder(sim.SeededTieOrder(len(all), seed)); err != nil {
		tb.Fatal(err)
	}
	_, _, capGPU := c.Capacity()
	w, err := NewWorkload(trace, capGPU, WorkloadConfig{Load: rho, Seed: seed, Cap: DefaultCap, Count: n})
	if err != nil {
		tb.Fatal(err)
	}
	return c, w
}

// benchOpenb runs n tasks at offered load 1.0 (seed 42), FGD placement, FIFO with backfill, no
// log, measuring after warmup seconds, and reports what was reached beside the speed.
func benchOpenb(b *testing.B, n int, warmup float64) {
	base, w := openbSetup(b, 0, n, 1.0, 42)
	b.ReportAllocs()
	var r *Result
	for b.Loop() {
		fgd, _ := policy.NewPlacer("fgd")
		q, _ := NewQueue("backfill")
		var err error
		if r, err = Run(base.Clone(), fgd, q, w.Arrivals, Config{Warmup: warmup, Seed: 42}, nil); err != nil {
			b.Fatal(err)
		}
	}
	d := r.Delays()
	b.ReportMetric(w.OfferedLoad, "offered")
	b.ReportMetric(r.AllocGPUMeanPct, "alloc%")
	b.ReportMetric(d[ClassGPU].Mean, "gpu-delay-s")
	b.ReportMetric(d[ClassMultiGPU].Mean, "multi-gpu-delay-s")
}

// BenchmarkOpenb50k is the acceptance run (issue 21: at most 3 s and 200 MB; peak RSS from
// scripts/bench.d/timed.sh), measured after 1 h.
func BenchmarkOpenb50k(b *testing.B) { benchOpenb(b, 50000, 3600) }

// BenchmarkOpenb150k is the steady state the probe measured: 150,000 tasks (about
// 11.8 h of arrivals), measured after a 4 h warm-up (the run-time cap).
func BenchmarkOpenb150k(b *testing.B) { benchOpenb(b, 150000, DefaultCap) }
