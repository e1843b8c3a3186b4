package fungible

import (
	"slices"
	"strings"
	"testing"

	"github.com/schedrl/schedrl/jobs"
)

// TestOracleShortOrLongFirst on one 8-GPU V100 server with ResNet-18 at 30, 94, 115 and 340
// steps/s on 1, 2, 4 and 8 GPUs, a job of 3,000 steps (100 s on 1 GPU) and one of 10^7.
// oracle-srtf: stage 1 starts the short job on 1 GPU (it finishes inside the round there) and
// gives the long job the count with the most steps per GPU that fits (4); stage 2 grows the short
// job into the 3 idle GPUs (2 saves 68 s, then 4 another 6 s). oracle-lrtf: the long job takes 2
// GPUs (its most efficient count), then grows to all 8, and the short one waits. The given ledger
// is left as it was.
func TestOracleShortOrLongFirst(t *testing.T) {
	tab := newTable().setAlone("v100", res18, 1, 30).setAlone("v100", res18, 2, 94).setAlone("v100", res18, 4, 115).setAlone("v100", res18, 8, 340)
	m := SpeedModel{Tput: tab, Sens: loadSensitivity(t)}
	l := NewLedger(mixCluster(t, "8:0:0"))
	st := RoundState{Now: 0, Round: &jobs.Round{Length: 360}, Present: []JobStatus{
		{Job: Job{ID: 1, Type: res18, GPUs: 1, Steps: 10_000_000}},
		{Job: Job{ID: 2, Type: res18, GPUs: 8, Steps: 3000}},
	}}
	for _, c := range []struct {
		o    Oracle
		want map[int]int // job -> GPUs, 0: waits
	}{
		{Oracle{}, map[int]int{1: 4, 2: 4}},
		{Oracle{Longest: true}, map[int]int{1: 8, 2: 0}},
	} {
		plan, err := c.o.Plan(l, m, st)
		if err != nil {
			t.Fatal(err)
		}
		checkCapacity(t, plan.Ledger)
		for id, want := range c.want {
			if a, _ := plan.Ledger.Get(id); a.GPUCount() != want {
				t.Errorf("%+v: job %d holds %d GPUs, want %d", c.o, id, a.GPUCount(), want)
			}
		}
	}
	if len(l.Jobs()) != 0 {
		t.Fatal("the given ledger changed")
	}
}

// TestOracleIsARoundPolicy: the ceilings are reachable by name, as `--policy oracle-srtf` and
// `oracle-lrtf` are (dashes read as underscores).
func TestOracleIsARoundPolicy(t *testing.T) {
	for name, want := range map[string]Oracle{"oracle_srtf": {}, "oracle_lrtf": {Longest: true}} {
		p, err := NewRoundPolicy(name)
		if err != nil {
			t.Fatal(err)
		}
		if o, ok := p.(Oracle); !ok || o != want {
			t.Fatalf("%s is %#v, want %#v", name, p, want)
		}
	}
}

// TestLowerBoundBelowEveryRun runs generated multi-GPU jobs over the real data on a busy
// 12:12:12 cluster under the clairvoyant ceilings, the rule that grows jobs, Sia and gandiva
// (which shares GPUs): no run goes below LowerBound with sharing, and none of the runs that never
// share goes below the bound without it. The ceilings' runs are deterministic and replay without
// over-commit.
func TestLowerBoundBelowEveryRun(t *testing.T) {
	m := gavelModel(t)
	c := mixCluster(t, "12:12:12")
	work, err := Generate(m.Tput, m.Sens.JobTypes(), WorkloadConfig{Jobs: 60, Interarrival: 300, MultiGPU: true, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	shared, err := LowerBound(c, m, work, true)
	if err != nil {
		t.Fatal(err)
	}
	alone, err := LowerBound(c, m, work, false)
	if err != nil {
		t.Fatal(err)
	}
	if !(shared.AvgJCT > 0 && shared.Makespan > 0) || alone.AvgJCT < shared.AvgJCT || alone.Makespan < shared.Makespan {
		t.Fatalf("bounds %+v with sharing, %+v without: want positive, and sharing's no higher", shared, alone)
	}
	rule := func(name string) Rule {
		r, err := LookupRule(name)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	runs := []struct {
		name   string
		cfg    func() RunConfig
		shares bool
	}{
		{"oracle-srtf", func() RunConfig { return RunConfig{Policy: Oracle{}, Log: true} }, false},
		{"oracle-lrtf", func() RunConfig { return RunConfig{Policy: Oracle{Longest: true}, Log: true} }, false},
		{"tune-scale/srtf", func() RunConfig { return RunConfig{Rule: rule("tune-scale"), Order: mustPolicy(t, "srtf")} }, false},
		{"sia", func() RunConfig { return RunConfig{Policy: NewSia(DefaultSiaOptions())} }, false},
		{"gandiva/fifo", func() RunConfig { return RunConfig{Rule: rule("gandiva"), Order: mustPolicy(t, "fifo")} }, true},
	}
	for _, r := range runs {
		res, err := Run(c, m, work, r.cfg())
		if err != nil {
			t.Fatalf("%s: %v", r.name, err)
		}
		b := alone
		if r.shares {
			b = shared
		}
		t.Logf("%s: avg JCT %.0f s (bound %.0f), makespan %.0f s (bound %.0f)", r.name, res.AvgJCT, b.AvgJCT, res.Makespan, b.Makespan)
		if res.AvgJCT < b.AvgJCT || res.Makespan < b.Makespan {
			t.Errorf("%s: avg JCT %g s, makespan %g s, below the bound %+v", r.name, res.AvgJCT, res.Makespan, b)
		}
		if !strings.HasPrefix(r.name, "oracle") {
			continue
		}
		if err := Replay(c, res.Log, func(l *Ledger) { checkCapacity(t, l) }); err != nil {
			t.Fatal(err)
		}
		again, err := Run(c, m, work, r.cfg())
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(again.JCT, res.JCT) {
			t.Fatalf("%s: two runs of the same work differ", r.name)
		}
	}
}

// TestLowerBoundLoneJob: one job alone runs at best at its fastest allocation, so the bound on its
// JCT is its steps over that speed (8 V100s at its profile's highest factor), and the makespan's
// is the same from its arrival.
func TestLowerBoundLoneJob(t *testing.T) {
	tab := newTable().setAlone("v100", res18, 1, 30).setAlone("v100", res18, 2, 94).setAlone("v100", res18, 4, 115).setAlone("v100", res18, 8, 340)
	m := SpeedModel{Tput: tab, Sens: loadSensitivity(t)}
	prof, err := m.Sens.Profile(res18)
	if err != nil {
		t.Fatal(err)
	}
	f := 0.0
	for _, row := range prof.tput {
		f = max(f, slices.Max(row))
	}
	j := Job{ID: 1, Type: res18, GPUs: 1, Steps: 340_000, Arrival: 50}
	b, err := LowerBound(mixCluster(t, "8:0:0"), m, []Job{j}, true)
	if err != nil {
		t.Fatal(err)
	}
	if want := 340_000 / (340 * f); !approx(b.AvgJCT, want) || !approx(b.Makespan, 50+want) {
		t.Fatalf("bound %+v, want avg JCT %g s and makespan %g s", b, want, 50+want)
	}
	if _, err := LowerBound(mixCluster(t, "8:0:0"), m, nil, true); !contains(err, "no jobs") {
		t.Fatalf("no jobs: %v", err)
	}
}

// TestFluidSRPT: sizes 2 (at 0) and 1 (at 0.5) on a machine of rate 1: the second preempts the
// first, which has 1.5 left, finishes at 1.5 (flow 1), and the first at 3 (flow 3).
func TestFluidSRPT(t *testing.T) {
	got := fluidSRPT([]Job{{ID: 0, Arrival: 0}, {ID: 1, Arrival: 0.5}}, []float64{2, 1})
	if !approx(got, 4) {
		t.Fatalf("sum of flow times %g, want 4", got)
	}
}
