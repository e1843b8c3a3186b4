package sim_test

import (
	"testing"

	"github.com/schedrl/schedrl/policy"
	"github.com/schedrl/schedrl/sim"
	"github.com/schedrl/schedrl/sim/simtest"
)

// halfFull is the default trace's cluster after FGD placed the first 5000 tasks of seed 42.
func halfFull(b *testing.B) (*sim.Cluster, *sim.Prepared) {
	p := simtest.Openb(b, "default", 1.3, 42)
	c, err := p.NewCluster()
	if err != nil {
		b.Fatal(err)
	}
	fgd, _ := policy.NewPlacer("fgd")
	rng := sim.RNG(42, sim.StreamPolicy)
	for _, t := range p.Workload[:5000] {
		if ch, ok := fgd.Place(c, t, rng); ok {
			if err := c.Place(t, ch); err != nil {
				b.Fatal(err)
			}
		}
	}
	return c, p
}

// BenchmarkSnapshotRestore is one look-ahead: snapshot, place a task, restore.
func BenchmarkSnapshotRestore(b *testing.B) {
	c, p := halfFull(b)
	t := p.Workload[6000]
	cands := c.Candidates(t, nil)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s := c.Snapshot()
		if err := c.Place(t, cands[i%len(cands)]); err != nil {
			b.Fatal(err)
		}
		if err := c.Restore(s); err != nil {
			b.Fatal(err)
		}
		c.Discard(s)
	}
}

func BenchmarkClone(b *testing.B) {
	c, _ := halfFull(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = c.Clone()
	}
}

// BenchmarkPlaceRemove is one feasible placement and its removal on the half-full cluster
// (incremental bookkeeping: one node's fragment is recomputed each time).
func BenchmarkPlaceRemove(b *testing.B) {
	c, p := halfFull(b)
	t := p.Workload[6000]
	cands := c.Candidates(t, nil)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := c.Place(t, cands[i%len(cands)]); err != nil {
			b.Fatal(err)
		}
		if _, err := c.Remove(t.Name); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCandidates enumerates every feasible choice (the RL action mask) for one task.
func BenchmarkCandidates(b *testing.B) {
	c, p := halfFull(b)
	t := p.Workload[6000]
	var buf []sim.Choice
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		buf = c.Candidates(t, buf[:0])
	}
}
