package fungible

import (
	"math"
	"testing"
)

// TestRunPlannersReplayWithoutOverCommit runs Gavel's three LPs on generated multi-GPU jobs over
// the real data, busy enough that jobs wait, and replays each log with an independent recount of
// every server after every event. The packed LP must pack pairs, and only pairs that can share;
// every job holds the fair share (alone) or half of it (in a pair).
func TestRunPlannersReplayWithoutOverCommit(t *testing.T) {
	m := gavelModel(t)
	c := mixCluster(t, "12:12:12")
	work, err := Generate(m.Tput, m.Sens.JobTypes(), WorkloadConfig{Jobs: 60, Interarrival: 300, MultiGPU: true, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range RoundPlannerNames() {
		pl, err := NewRoundPlanner(name)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Run(c, m, work, RunConfig{Planner: pl, Log: true})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := Replay(c, res.Log, func(l *Ledger) { checkCapacity(t, l) }); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		shared := 0
		for i, e := range res.Log {
			if e.Op != Start {
				continue
			}
			a := e.Alloc
			// A pair starts as two events: the first job, then its partner naming it.
			first := i+1 < len(res.Log) && res.Log[i+1].Op == Start && res.Log[i+1].Alloc.Partner == a.Job
			fc, fm := c.FairShare(a.GPUType)
			if first {
				fc, fm = fc/2, fm/2
			}
			if a.Partner == NoPartner && (a.CPUsPerGPU != fc || a.MemPerGPU != fm) {
				t.Fatalf("%s: job %d alone at %g CPUs, %g GB per GPU, want the fair share %g, %g", name, a.Job, a.CPUsPerGPU, a.MemPerGPU, fc, fm)
			}
			if a.Partner != NoPartner {
				shared++
				if a.CPUsPerGPU != fc/2 || a.MemPerGPU != fm/2 {
					t.Fatalf("%s: job %d paired at %g CPUs, %g GB per GPU, want half the fair share", name, a.Job, a.CPUsPerGPU, a.MemPerGPU)
				}
			}
		}
		for i, jct := range res.JCT {
			if !(jct > 0) {
				t.Fatalf("%s: job %d JCT %g", name, i, jct)
			}
		}
		t.Logf("%s: avg JCT %.0f s, makespan %.0f s, utilization %.3f, %d rounds, %d paired starts", name, res.AvgJCT, res.Makespan, res.Utilization, res.Rounds, shared)
		if (name == "max_min_fairness_packed") != (shared > 0) {
			t.Errorf("%s: %d paired starts", name, shared)
		}
	}
}

// TestPackedLPOptimum checks the LP on a case solved by hand: one GPU, two jobs of different
// types (normalised speeds 1 alone, 0.75 each paired). Alone, time-slicing gives each 1/2; the
// pair gives each 0.75 at once, so the optimum packs them all the time: T = 0.75.
func TestPackedLPOptimum(t *testing.T) {
	lp := packedLP{
		types:   []string{"v100"},
		cap:     []float64{1},
		classes: []lpClass{{n: 1, gpus: 1, alone: []float64{1}}, {n: 1, gpus: 1, alone: []float64{1}}},
		pairs:   []lpPair{{c: 0, d: 1, self: []float64{0.75}, peer: []float64{0.75}}},
	}
	s, err := lp.solve()
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(s.t-0.75) > 1e-9 || math.Abs(s.paired[0][0]-1) > 1e-9 || s.alone[0][0] > 1e-9 || s.alone[1][0] > 1e-9 {
		t.Fatalf("T %g, paired %v, alone %v; want T 0.75, paired 1, alone 0", s.t, s.paired, s.alone)
	}
	// Paired at 0.4 each, the pair is worse than time-slicing (0.5 each): T = 0.5, no pairing.
	lp.pairs[0].self[0], lp.pairs[0].peer[0] = 0.4, 0.4
	if s, err = lp.solve(); err != nil {
		t.Fatal(err)
	}
	if math.Abs(s.t-0.5) > 1e-9 || s.paired[0][0] > 1e-9 {
		t.Fatalf("T %g, paired %v; want T 0.5, no pairing", s.t, s.paired)
	}
	// Three jobs of one class on two GPUs: each gets 2/3 of a GPU alone; T = 2/3 (n T <= 2).
	lp = packedLP{types: []string{"v100"}, cap: []float64{2}, classes: []lpClass{{n: 3, gpus: 1, alone: []float64{1}}}}
	if s, err = lp.solve(); err != nil {
		t.Fatal(err)
	}
	if math.Abs(s.t-2.0/3) > 1e-9 || math.Abs(s.alone[0][0]-2) > 1e-9 {
		t.Fatalf("T %g, alone %v; want 2/3 and a total of 2", s.t, s.alone)
	}
}
