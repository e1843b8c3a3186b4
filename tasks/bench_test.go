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

// BenchmarkOpenb50k is the acceptance run: 50,000 tasks at offered load 1.0, FGD placement,
// FIFO with backfill, no log (issue 21: at most 3 s and 200 MB).
func BenchmarkOpenb50k(b *testing.B) {
	base, w := openbSetup(b, 0, 50000, 1.0, 42)
	b.ReportAllocs()
	var r *Result
	for b.Loop() {
		fgd, _ := policy.NewPlacer("fgd")
		q, _ := NewQueue("backfill")
		var err error
		if r, err = Run(base.Clone(), fgd, q, w.Arrivals, Config{Warmup: 3600, Seed: 42}, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(r.AllocGPUMeanPct, "alloc%")
	b.ReportMetric(r.Delays()[ClassGPU].Mean, "gpu-delay-s")
}
