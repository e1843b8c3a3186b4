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
	for _, name := range RoundPolicyNames() {
		pl, err := NewRoundPolicy(name)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Run(c, m, work, RunConfig{Policy: pl, Log: true})
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

// TestPackedLPFastestShortcut: the shortcut is taken only when every class fits its fastest type,
// and then its T is the simplex's optimum.
func TestPackedLPFastestShortcut(t *testing.T) {
	lp := packedLP{
		types:   []string{"v100", "k80"},
		cap:     []float64{2, 4},
		classes: []lpClass{{n: 2, gpus: 1, alone: []float64{1.5, 0.5}}, {n: 1, gpus: 4, alone: []float64{1.2, 0.9}}},
		pairs:   []lpPair{{c: 0, d: 0, self: []float64{1, 0.3}, peer: []float64{1, 0.3}}},
	}
	if _, ok := lp.fastest(); ok {
		t.Fatal("shortcut taken although the 4-GPU job's fastest type (v100) has 2 GPUs")
	}
	lp.cap = []float64{6, 4}
	got, ok := lp.fastest()
	if !ok || got.t != 1.2 || got.alone[0][0] != 2 || got.alone[1][0] != 1 {
		t.Fatalf("shortcut %v %+v, want every job alone on v100, T 1.2", ok, got)
	}
	want, err := lp.simplex()
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(want.t-got.t) > 1e-9 {
		t.Fatalf("shortcut T %g, simplex T %g", got.t, want.t)
	}
	lp.classes = append(lp.classes, lpClass{n: 1, gpus: 1, alone: []float64{0, 0}})
	if _, ok := lp.fastest(); ok {
		t.Fatal("shortcut taken for a class that runs nowhere")
	}
}

// TestPackedPairsWhereTheLPGains: two 1-GPU jobs on one GPU whose pair runs each at 6.5/7 of its
// speed alone. The packed LP's unique optimum pairs them all the time (a min normalised
// throughput of 0.93 against 0.5 time-slicing; any time alone for one costs the other more): the short job finishes at its paired speed, the long one runs on
// alone; max_min_fairness_perf time-slices them and both finish later. With a [0, 0] pair entry
// the packed LP cannot pair them and time-slices too.
func TestPackedPairsWhereTheLPGains(t *testing.T) {
	tab := newTable().setAlone("v100", a3c, 1, 7).setAlone("v100", lm, 1, 60).
		setPair("v100", a3c, lm, 1, 6.5, 60*6.5/7)
	m := SpeedModel{Tput: tab, Sens: loadSensitivity(t)}
	c := Cluster{{Name: "v-0", GPUType: "v100", GPUs: 1, CPUs: 3, MemGB: 62.5}}
	work := []Job{{ID: 0, Type: a3c, GPUs: 1, Steps: 6000, Arrival: 0}, {ID: 1, Type: lm, GPUs: 1, Steps: 75000, Arrival: 0}}
	run := func(name string) Result {
		t.Helper()
		pl, err := NewRoundPolicy(name)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Run(c, m, work, RunConfig{Policy: pl, Round: 360, Log: true})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return res
	}
	packed, perf := run("max_min_fairness_packed"), run("max_min_fairness_perf")
	if a := packed.Log[1].Alloc; packed.Log[1].Op != Start || a.Partner != 0 || a.CPUsPerGPU != 1.5 {
		t.Fatalf("packed log %+v: want job 1 started with job 0 at half the fair share", packed.Log[:2])
	}
	t0 := 6000 / 6.5
	t1 := t0 + (75000-60*6.5/7*t0)/60
	if !approx(packed.JCT[0], t0) || !approx(packed.JCT[1], t1) {
		t.Fatalf("packed JCTs %v, want %g (paired) and %g (paired, then alone)", packed.JCT, t0, t1)
	}
	if !(perf.JCT[0] > packed.JCT[0] && perf.AvgJCT > packed.AvgJCT) {
		t.Fatalf("perf JCTs %v (avg %g), want both later than packed's %v (avg %g)", perf.JCT, perf.AvgJCT, packed.JCT, packed.AvgJCT)
	}
	tab.setPair("v100", a3c, lm, 1, 0, 0)
	for _, e := range run("max_min_fairness_packed").Log {
		if e.Alloc.Partner != NoPartner {
			t.Fatalf("a [0, 0] pair shares: %+v", e)
		}
	}
}

// TestRunPlannersRejectBadWork: a planner's run checks the work as the fixed-demand rule does,
// before the first round: a job type without a Synergy mapping or a throughput is named.
func TestRunPlannersRejectBadWork(t *testing.T) {
	m := gavelModel(t)
	c := mixCluster(t, "8:0:0")
	for want, work := range map[string][]Job{
		`job type "Mystery" has no Synergy mapping`:                       {{ID: 1, Type: "Mystery", GPUs: 1, Steps: 10}},
		`job 2: no throughput for "ResNet-50 (batch size 64)" on 16 GPUs`: {{ID: 2, Type: res50, GPUs: 16, Steps: 10}},
	} {
		for _, name := range RoundPolicyNames() {
			pl, _ := NewRoundPolicy(name)
			if _, err := Run(c, m, work, RunConfig{Policy: pl}); !contains(err, want) {
				t.Errorf("%s: error %v, want %q", name, err, want)
			}
		}
	}
	if _, err := NewRoundPolicy("max_min_fairness_pakced"); !contains(err, `unknown round policy "max_min_fairness_pakced" (have max_min_fairness, max_min_fairness_packed, max_min_fairness_perf, oracle_lrtf, oracle_srtf, sia)`) {
		t.Errorf("error %v", err)
	}
}
