package tasks

import (
	"slices"
	"strings"
	"testing"

	"github.com/schedrl/schedrl/policy"
	"github.com/schedrl/schedrl/sim"
)

func TestParseLookahead(t *testing.T) {
	l, err := ParseLookahead("Lookahead:4,900")
	if err != nil || l.K != 4 || l.H != 900 || l.Name() != "lookahead:4,900" {
		t.Fatalf("lookahead:4,900: %+v, %v", l, err)
	}
	for _, bad := range []string{"lookahead:", "lookahead:4", "lookahead:0,900", "lookahead:4,0", "lookahead:4,-1", "lookahead:65,10", "lookahead:4,NaN", "lookahead:x,9", "lookahead:4,9e9"} {
		if _, err := NewPlacer(bad); err == nil || !strings.Contains(err.Error(), "want lookahead:K,H") {
			t.Errorf("%q: %v, want the form's error", bad, err)
		}
	}
	if p, err := NewPlacer("fgd"); err != nil || p.Name() != "fgd" {
		t.Errorf("fgd: %v, %v", p, err)
	}
}

// Two 1-GPU nodes; a (half a GPU) runs 0..100, b (half) 1..10, c (half) 2..100, d (half)
// 3..10. FGD fills a's GPU with b, so c and d share the other and at 10 two half GPUs are
// idle to 99 (ratio 100%). Knowing the run times, the lookahead puts b apart, c with a and d
// with b: from 10 a whole GPU is idle (ratio 0).
func TestLookaheadGroupsTasksThatEndTogether(t *testing.T) {
	nodes := []sim.Node{{Name: "n0", CPU: 64000, Mem: 64000, GPUs: 1, GPUType: "T4"}, {Name: "n1", CPU: 64000, Mem: 64000, GPUs: 1, GPUType: "T4"}}
	model, err := sim.TypicalShapes([]sim.Task{gpuTask("s", 1, 1000)}, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	arrivals := []Arrival{
		{Task: gpuTask("a", 1, 500), Time: 0, RunTime: 100},
		{Task: gpuTask("b", 1, 500), Time: 1, RunTime: 9},
		{Task: gpuTask("c", 1, 500), Time: 2, RunTime: 98},
		{Task: gpuTask("d", 1, 500), Time: 3, RunTime: 7},
		{Task: gpuTask("z", 0, 0), Time: 99, RunTime: 1},
	}
	run := func(name string) *Result {
		t.Helper()
		c, err := sim.NewCluster(nodes, model)
		if err != nil {
			t.Fatal(err)
		}
		p, err := NewPlacer(name)
		if err != nil {
			t.Fatal(err)
		}
		q, _ := NewQueue("backfill")
		r, err := Run(c, p, q, arrivals, Config{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	fgd, look := run("fgd"), run("lookahead:2,200")
	if fgd.FragRatioMeanPct < 90 {
		t.Errorf("FGD's ratio %v%%, want over 90%%", fgd.FragRatioMeanPct)
	}
	if look.FragRatioMeanPct > 5 {
		t.Errorf("lookahead's ratio %v%%, want under 5%%", look.FragRatioMeanPct)
	}
	if again := run("lookahead:2,200"); again.FragRatioMeanPct != look.FragRatioMeanPct {
		t.Errorf("a second run's ratio %v%%, the first's %v%%", again.FragRatioMeanPct, look.FragRatioMeanPct)
	}
}

// With one candidate the lookahead is FGD: the same starts on a 64-node openb world at load 0.9.
func TestLookaheadOneIsFGD(t *testing.T) {
	base, w := openbSetup(t, 64, 600, 0.9, 7)
	run := func(p policy.Placer) *Result {
		t.Helper()
		q, _ := NewQueue("backfill")
		r, err := Run(base.Clone(), p, q, w.Arrivals, Config{Seed: 7}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	fgd, _ := policy.NewPlacer("fgd")
	one, _ := NewPlacer("lookahead:1,600")
	a, b := run(fgd), run(one)
	if !slices.Equal(a.Start, b.Start) || a.FragRatioMeanPct != b.FragRatioMeanPct {
		t.Errorf("lookahead:1 differs from FGD: ratio %v%% against %v%%", b.FragRatioMeanPct, a.FragRatioMeanPct)
	}
	four, _ := NewPlacer("lookahead:4,600")
	if r := run(four); r.Rejected != a.Rejected || len(r.Start) != len(a.Start) {
		t.Errorf("lookahead:4 rejected %d, FGD %d", r.Rejected, a.Rejected)
	}
}
