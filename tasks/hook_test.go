package tasks

import (
	"math"
	"testing"

	"github.com/schedrl/schedrl/policy"
	"github.com/schedrl/schedrl/sim"
)

// scripted migrates b onto a's node at time 2 with 3 s of downtime.
type scripted struct {
	t     *testing.T
	calls []float64
}

func (s *scripted) Invoke(v *View) (float64, error) {
	s.calls = append(s.calls, v.Now())
	if v.Now() < 2 {
		return 2, nil
	}
	c := v.Cluster()
	a, _ := c.Placement("a")
	b, _ := c.Placement("b")
	if a.Choice.Node == b.Choice.Node {
		s.t.Fatalf("a and b share node %d; the case needs them apart", a.Choice.Node)
	}
	if w := v.Waiting(); len(w) != 1 || v.Arrival(w[0]).Task.Name != "c" {
		s.t.Errorf("waiting %v, want c alone", w)
	}
	set, _ := c.TightestGPUs(b.Task, a.Choice.Node)
	if err := v.Migrate("b", sim.Choice{Node: a.Choice.Node, GPUs: set}, 3); err != nil {
		return 0, err
	}
	if !v.Migrating("b") || v.Migrate("b", b.Choice, 1) == nil {
		s.t.Errorf("b in downtime can be migrated again")
	}
	return math.Inf(1), nil
}

// Two 2-GPU nodes: a and b (1 GPU, 10 s) run apart, c (2 GPUs) waits. Moving b next to a with
// 3 s of downtime holds both of b's places from 2 to 5 (3 of 4 GPUs allocated), then frees
// b's node for c at 5, and b finishes 3 s late (13.5 instead of 10.5).
func TestMigrationDowntime(t *testing.T) {
	nodes := []sim.Node{{Name: "n0", CPU: 64000, Mem: 64000, GPUs: 2, GPUType: "T4"}, {Name: "n1", CPU: 64000, Mem: 64000, GPUs: 2, GPUType: "T4"}}
	c, err := sim.NewCluster(nodes, nil)
	if err != nil {
		t.Fatal(err)
	}
	// First fit: a and x on n0, b on n1; x leaves at 1, so c (2 GPUs) finds one GPU free on each.
	firstfit, _ := policy.NewPlacer("firstfit")
	q, _ := NewQueue("backfill")
	arrivals := []Arrival{
		{Task: gpuTask("a", 1, 1000), Time: 0, RunTime: 10},
		{Task: gpuTask("x", 1, 1000), Time: 0, RunTime: 1},
		{Task: gpuTask("b", 1, 1000), Time: 0.5, RunTime: 10},
		{Task: gpuTask("c", 2, 1000), Time: 1.5, RunTime: 5},
		{Task: gpuTask("d", 0, 0), Time: 20, RunTime: 1},
	}
	h := &scripted{t: t}
	r, err := Run(c, firstfit, q, arrivals, Config{SeriesStep: 1, Defrag: h}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Start[3] != 5 || r.Finish[2] != 13.5 || r.Finish[0] != 10 || r.Migrations != 1 || r.DowntimeS != 3 {
		t.Errorf("c starts %v, b finishes %v, a %v; %d migrations, %v s downtime", r.Start[3], r.Finish[2], r.Finish[0], r.Migrations, r.DowntimeS)
	}
	if r.Series[3].AllocGPUPct != 75 || r.Series[5].AllocGPUPct != 100 {
		t.Errorf("allocation at 3 s %v%%, at 5 s %v%%", r.Series[3].AllocGPUPct, r.Series[5].AllocGPUPct)
	}
	// After 2 it asks for no more calls.
	if len(h.calls) != 2 || h.calls[0] != 0 || h.calls[1] != 2 {
		t.Errorf("invoked at %v, want [0 2]", h.calls)
	}
	// c waited 1.5..5 for 2 GPUs: 7 GPU-seconds pending.
	if math.Abs(r.PendingGPUHours-7.0/3600) > 1e-12 {
		t.Errorf("pending %v GPU-hours", r.PendingGPUHours)
	}
}
