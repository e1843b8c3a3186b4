package tasks

import (
	"errors"
	"math"
	"testing"

	"github.com/schedrl/schedrl/policy"
	"github.com/schedrl/schedrl/sim"
)

// swapper repacks a and b onto each other's places at time 1: two full nodes, so no single
// migration could start the swap.
type swapper struct{ moved int }

func (s *swapper) Invoke(v *View) (float64, error) {
	if v.Now() < 1 {
		return 1, nil
	}
	c := v.Cluster()
	a, _ := c.Placement("a")
	b, _ := c.Placement("b")
	if _, err := v.Repack(map[string]sim.Choice{"a": {Node: a.Choice.Node, GPUs: a.Choice.GPUs}, "b": a.Choice}); err == nil {
		return 0, errBadRepack
	}
	if p, _ := c.Placement("b"); p.Choice != b.Choice {
		return 0, errBadRepack
	}
	n, err := v.Repack(map[string]sim.Choice{"a": b.Choice, "b": a.Choice})
	s.moved = n
	return math.Inf(1), err
}

var errBadRepack = errors.New("a repack onto an occupied place was accepted, or its refusal changed the cluster")

func TestRepackSwapsAtOnce(t *testing.T) {
	nodes := []sim.Node{{Name: "n0", CPU: 64000, Mem: 64000, GPUs: 2, GPUType: "T4"}, {Name: "n1", CPU: 64000, Mem: 64000, GPUs: 2, GPUType: "T4"}}
	c, err := sim.NewCluster(nodes, nil)
	if err != nil {
		t.Fatal(err)
	}
	firstfit, _ := policy.NewPlacer("firstfit")
	q, _ := NewQueue("backfill")
	arrivals := []Arrival{
		{Task: gpuTask("a", 2, 1000), Time: 0, RunTime: 10},
		{Task: gpuTask("b", 2, 1000), Time: 0, RunTime: 10},
		{Task: gpuTask("d", 0, 0), Time: 5, RunTime: 1},
	}
	h := &swapper{}
	r, err := Run(c, firstfit, q, arrivals, Config{Defrag: h}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if h.moved != 2 || r.Migrations != 2 || r.DowntimeS != 0 || r.Finish[0] != 10 || r.Finish[1] != 10 {
		t.Errorf("moved %d, %d migrations, %v s downtime, finishes %v %v", h.moved, r.Migrations, r.DowntimeS, r.Finish[0], r.Finish[1])
	}
}

// One 2-GPU node: a (1 GPU) runs 0..10 and b (half a GPU) 0..5; from 5 to 10 one GPU is idle
// whole (no fragment) and before that half a GPU is idle. With a typical shape of one whole GPU,
// the half GPU is all fragment (ratio 100%) and the whole one none: the time mean over [0, 10]
// is 50%.
func TestFragRatioMeanIsTheTimeMean(t *testing.T) {
	nodes := []sim.Node{{Name: "n0", CPU: 64000, Mem: 64000, GPUs: 2, GPUType: "T4"}}
	model, err := sim.TypicalShapes([]sim.Task{gpuTask("s", 1, 1000)}, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	c, err := sim.NewCluster(nodes, model)
	if err != nil {
		t.Fatal(err)
	}
	firstfit, _ := policy.NewPlacer("firstfit")
	q, _ := NewQueue("backfill")
	arrivals := []Arrival{
		{Task: gpuTask("a", 1, 1000), Time: 0, RunTime: 10},
		{Task: gpuTask("b", 1, 500), Time: 0, RunTime: 5},
		{Task: gpuTask("d", 0, 0), Time: 10, RunTime: 1},
	}
	r, err := Run(c, firstfit, q, arrivals, Config{SeriesStep: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(r.FragRatioMeanPct-50) > 1e-9 {
		t.Errorf("time-mean fragment ratio %v%%, want 50%%", r.FragRatioMeanPct)
	}
	if p := r.Series[2]; p.FreeGPUs != 0 || p.FreeNodes8 != 0 || p.FragRatioPct != 100 {
		t.Errorf("at 2 s %+v, want no free whole GPU, ratio 100%%", p)
	}
	if p := r.Series[7]; p.FreeGPUs != 1 || p.FragRatioPct != 0 {
		t.Errorf("at 7 s %+v, want one free whole GPU, ratio 0%%", p)
	}
}

// A burst of two 2-GPU jobs at 1 s on a node a 2-GPU task holds until 4: the jobs wait 3 and 6
// s, measured apart from the workload's tasks.
func TestBurstIsMeasuredApart(t *testing.T) {
	nodes := []sim.Node{{Name: "n0", CPU: 64000, Mem: 64000, GPUs: 2, GPUType: "T4"}}
	c, err := sim.NewCluster(nodes, nil)
	if err != nil {
		t.Fatal(err)
	}
	base := []Arrival{{Task: gpuTask("a", 2, 1000), Time: 0, RunTime: 4}, {Task: gpuTask("d", 0, 0), Time: 2, RunTime: 1}}
	arrivals, err := WithBurst(base, gpuTask("", 2, 1000), 2, 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(arrivals) != 4 || arrivals[1].Task.Name != "burst-0" || arrivals[2].Task.Name != "burst-1" || !arrivals[2].Burst {
		t.Fatalf("arrivals %+v", arrivals)
	}
	if _, err := WithBurst(base, gpuTask("", 2, 1000), 1, 1, 0); err == nil {
		t.Error("a burst of zero run time was accepted")
	}
	firstfit, _ := policy.NewPlacer("firstfit")
	q, _ := NewQueue("fifo")
	r, err := Run(c, firstfit, q, arrivals, Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b := r.BurstDelays(); b.Tasks != 2 || b.Mean != 4.5 {
		t.Errorf("burst delays %+v, want 2 tasks, mean 4.5 s", b)
	}
	if d := r.Delays(); d["all"].Tasks != 2 || d[ClassMultiGPU].Tasks != 1 {
		t.Errorf("measured %+v, want a and d only", d)
	}
}
