package policy

import (
	"math"
	"slices"
	"testing"

	"github.com/schedrl/schedrl/sim"
	"github.com/schedrl/schedrl/sim/simtest"
)

// bestMoveGain is the largest fragment decrease of any single migration of a running task to
// a feasible choice on another node, by brute force over every task and candidate.
func bestMoveGain(c *sim.Cluster) float64 {
	best := 0.0
	var cands []sim.Choice
	for _, p := range c.Placements() {
		without, _ := c.FragWithout(p.Task.Name)
		cands = c.Candidates(p.Task, cands[:0])
		for _, ch := range cands {
			if ch.Node == p.Choice.Node {
				continue
			}
			best = max(best, c.NodeFrag(p.Choice.Node)-without-c.FragDelta(p.Task, ch))
		}
	}
	return best
}

// TestGreedyMakesTheBestMove checks greedy's kept per-node scores against a brute-force search
// at every step, on a cluster that keeps changing between plans of the same planner: each move
// lowers the fragment by the most any single move can, and a planner that plans again after
// departures and arrivals plans exactly as a new one on a copy of the cluster.
func TestGreedyMakesTheBestMove(t *testing.T) {
	nodes, tasks, model := simtest.OpenbTrace(t, "default")
	c, err := sim.NewCluster(nodes[:150], model)
	if err != nil {
		t.Fatal(err)
	}
	rnd, _ := NewPlacer("random")
	fgd, _ := NewPlacer("fgd")
	if _, err := sim.RunArrivals(c, tasks[:400], rnd, sim.RNG(5, sim.StreamPolicy), nil); err != nil {
		t.Fatal(err)
	}
	kept := &greedy{}
	next := 400
	for plan := range 3 {
		fresh := c.Clone()
		want, err := (&greedy{}).Defrag(fresh, fgd, 8, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		for step := range 8 {
			before, bound := c.ClusterFrag(), bestMoveGain(c)
			moves, err := kept.Defrag(c, fgd, 1, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(moves) == 0 {
				if bound > 1e-9 {
					t.Fatalf("plan %d step %d: greedy stopped, a move lowers the fragment by %.3f", plan, step, bound)
				}
				break
			}
			if gain := before - c.ClusterFrag(); math.Abs(gain-bound) > 1e-6 {
				t.Fatalf("plan %d step %d: %+v lowered the fragment by %.6f, the best move by %.6f", plan, step, moves[0], gain, bound)
			}
			if step < len(want) && moves[0] != want[step] {
				t.Fatalf("plan %d step %d: %+v, a new planner on a copy moves %+v", plan, step, moves[0], want[step])
			}
		}
		// Between plans the cluster changes under the planner: a tenth of the tasks leave and
		// new ones arrive.
		names := []string{}
		for _, pl := range c.Placements() {
			names = append(names, pl.Task.Name)
		}
		slices.Sort(names)
		for k := 0; k < len(names); k += 10 {
			if _, err := c.Remove(names[k]); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := sim.RunArrivals(c, tasks[next:next+60], rnd, sim.RNG(5, uint64(plan)), nil); err != nil {
			t.Fatal(err)
		}
		next += 60
	}
}
