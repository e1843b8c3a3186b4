package tasks

import (
	"math"
	"slices"
	"testing"

	"github.com/schedrl/schedrl/sim"
	"math/rand/v2"
)

// Two 2-GPU nodes with one GPU busy on each: a 2-GPU task waits on the real cluster until a
// node empties, while the pool (2 GPUs free in all) starts it at once; a 4-GPU task fits no
// node of the empty cluster and is rejected by both.
// A half-GPU task behind them shows the pool's backfill.
func TestPooledIgnoresNodeBoundaries(t *testing.T) {
	nodes := []sim.Node{{Name: "n0", CPU: 64000, Mem: 64000, GPUs: 2, GPUType: "T4"}, {Name: "n1", CPU: 64000, Mem: 64000, GPUs: 2, GPUType: "T4"}}
	arrivals := []Arrival{
		{Task: gpuTask("a", 1, 1000), Time: 0, RunTime: 10},
		{Task: gpuTask("b", 1, 1000), Time: 1, RunTime: 20},
		{Task: gpuTask("c", 2, 1000), Time: 2, RunTime: 5},
		{Task: gpuTask("big", 4, 1000), Time: 3, RunTime: 5},
		{Task: gpuTask("d", 1, 500), Time: 4, RunTime: 1},
	}
	c, err := sim.NewCluster(nodes, nil)
	if err != nil {
		t.Fatal(err)
	}
	// a and b spread over both nodes, as a fragmenting placer leaves them.
	real, err := Run(c, spreadPlacer{}, &backfill{index: map[request]int{}}, arrivals, Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	pooled, err := RunPooled(nodes, arrivals, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Real: c waits for a to leave n0 (10); d, half a GPU, backfills beside a at 4.
	if want := []float64{0, 1, 10, math.NaN(), 4}; !equalNaN(real.Start, want) {
		t.Errorf("real starts %v, want %v", real.Start, want)
	}
	// Pooled: c starts at 2 with the two free GPUs and holds the pool full; d starts when c
	// leaves (7).
	if want := []float64{0, 1, 2, math.NaN(), 7}; !equalNaN(pooled.Start, want) {
		t.Errorf("pooled starts %v, want %v", pooled.Start, want)
	}
	if pooled.Rejected != 1 || real.Rejected != 1 {
		t.Errorf("rejected: pooled %d, real %d", pooled.Rejected, real.Rejected)
	}
	// Window [0, 4]: 1 GPU on [0,1), 2 on [1,2), 4 on [2,4) of 4: (1+2+8)/16.
	if got := pooled.AllocGPUMeanPct; math.Abs(got-100*11.0/16) > 1e-9 {
		t.Errorf("pooled allocation %v%%", got)
	}
	if got := pooled.Delays()[ClassMultiGPU]; got.Mean != 0 {
		t.Errorf("pooled multi-GPU delay %+v", got)
	}
}

// spreadPlacer puts a task on the emptiest node that fits it (the least GPU allocated).
type spreadPlacer struct{}

func (spreadPlacer) Name() string { return "spread" }

func (spreadPlacer) Place(c *sim.Cluster, t sim.Task, _ *rand.Rand) (sim.Choice, bool) {
	best, bestFree := -1, int64(-1)
	for n := range c.NumNodes() {
		if _, ok := c.TightestGPUs(t, n); ok && c.Free(n).TotalGPU() > bestFree {
			best, bestFree = n, c.Free(n).TotalGPU()
		}
	}
	if best < 0 {
		return sim.Choice{}, false
	}
	set, _ := c.TightestGPUs(t, best)
	return sim.Choice{Node: best, GPUs: set}, true
}

func equalNaN(a, b []float64) bool {
	return slices.EqualFunc(a, b, func(x, y float64) bool { return x == y || math.IsNaN(x) && math.IsNaN(y) })
}
