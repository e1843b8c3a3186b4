package tasks

import (
	"math"
	"slices"
	"testing"

	"github.com/schedrl/schedrl/policy"
	"github.com/schedrl/schedrl/sim"
)

func gpuTask(name string, numGPU int, milli int64) sim.Task {
	return sim.Task{Name: name, CPU: 1000, Mem: 100, NumGPU: numGPU, GPUMilli: milli}
}

// runSmall runs arrivals on one 2-GPU node with FGD and the named queue.
func runSmall(t *testing.T, queue string, arrivals []Arrival) *Result {
	t.Helper()
	c, err := sim.NewCluster([]sim.Node{{Name: "n0", CPU: 64000, Mem: 64000, GPUs: 2, GPUType: "T4"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	fgd, _ := policy.NewPlacer("fgd")
	q, err := NewQueue(queue)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(c, fgd, q, arrivals, Config{SeriesStep: 5}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// On one 2-GPU node: a (1 GPU, 10 s) at 0, b (2 GPUs, 4 s) at 1, c (1 GPU, 5 s) at 2, d (half a
// GPU, 1 s) at 3. With backfill c starts at once beside a, d when c leaves, b when a leaves;
// strict FIFO holds c and d behind b.
func TestQueueOrderKnownCase(t *testing.T) {
	arrivals := []Arrival{
		{Task: gpuTask("a", 1, 1000), Time: 0, RunTime: 10},
		{Task: gpuTask("b", 2, 1000), Time: 1, RunTime: 4},
		{Task: gpuTask("c", 1, 1000), Time: 2, RunTime: 5},
		{Task: gpuTask("d", 1, 500), Time: 3, RunTime: 1},
	}
	for queue, want := range map[string][]float64{"backfill": {0, 10, 2, 7}, "fifo": {0, 10, 14, 14}} {
		r := runSmall(t, queue, arrivals)
		if !slices.Equal(r.Start, want) {
			t.Errorf("%s: starts %v, want %v", queue, r.Start, want)
		}
		if queue != "fifo" {
			// Completion times 10, 13, 5, 5: mean 8.25, empirical median 5.
			if got := r.Completion(); got.Tasks != 4 || got.Mean != 8.25 || got.P50 != 5 || got.P99 != 13 {
				t.Errorf("backfill: completion %+v", got)
			}
			continue
		}
		// GPU-time 10x1000 + 4x2000 + 5x1000 + 1x500 milli-s over 2,000 milli x 19 s.
		if r.Makespan != 19 || math.Abs(r.Utilization-23500.0/38000) > 1e-12 || r.Rejected != 0 {
			t.Errorf("fifo: makespan %v, utilization %v", r.Makespan, r.Utilization)
		}
		// Series every 5 s: a runs alone (50%), then with b, c, d waiting; b (100%); c alone.
		if len(r.Series) != 4 || r.Series[0].AllocGPUPct != 50 || r.Series[1].Waiting != 3 || r.Series[2].AllocGPUPct != 100 ||
			r.Series[3].AllocGPUPct != 50 || r.Series[3].Waiting != 0 {
			t.Errorf("fifo: series %+v", r.Series)
		}
		if got := r.Delays()["multi-gpu"]; got.Tasks != 1 || got.Mean != 9 {
			t.Errorf("fifo: multi-GPU delay %+v", got)
		}
	}
}

func TestRejectsWhatFitsNowhere(t *testing.T) {
	r := runSmall(t, "backfill", []Arrival{
		{Task: gpuTask("big", 4, 1000), Time: 0, RunTime: 10},
		{Task: gpuTask("ok", 1, 1000), Time: 1, RunTime: 2},
	})
	if r.Rejected != 1 || !math.IsNaN(r.Start[0]) || r.Start[1] != 1 || len(r.Measured()) != 1 {
		t.Fatalf("rejected %d, starts %v", r.Rejected, r.Start)
	}
}

// rescan is the reference the incremental backfill must equal: every pass offers every waiting
// task in arrival order.
type rescan struct{ waiting []int }

func (q *rescan) Add(i int, _ sim.Task) { q.waiting = append(q.waiting, i) }
func (q *rescan) Waiting() int          { return len(q.waiting) }
func (q *rescan) Pass(_ *sim.Cluster, _ []int, start func(int) bool) {
	q.waiting = slices.DeleteFunc(q.waiting, start)
}

func TestIncrementalBackfillEqualsRescan(t *testing.T) {
	base, w := openbSetup(t, 100, 4000, 1.3, 3)
	var starts [2][]float64
	for k, q := range []Queue{&backfill{index: map[request]int{}}, &rescan{}} {
		fgd, _ := policy.NewPlacer("fgd")
		r, err := Run(base.Clone(), fgd, q, w.Arrivals, Config{Seed: 3}, nil)
		if err != nil {
			t.Fatal(err)
		}
		starts[k] = r.Start
	}
	delayed := 0
	for i := range starts[0] {
		if starts[0][i] != starts[1][i] {
			t.Fatalf("task %d starts at %v incrementally, %v on a rescan", i, starts[0][i], starts[1][i])
		}
		if starts[0][i] > w.Arrivals[i].Time {
			delayed++
		}
	}
	if delayed < 100 {
		t.Fatalf("only %d of %d tasks waited: the case does not exercise the queue", delayed, len(starts[0]))
	}
}

func TestRunRejectsBadArrivals(t *testing.T) {
	c, _ := sim.NewCluster([]sim.Node{{Name: "n0", CPU: 64000, Mem: 64000, GPUs: 2, GPUType: "T4"}}, nil)
	fgd, _ := policy.NewPlacer("fgd")
	for name, arr := range map[string][]Arrival{
		"negative": {{Task: gpuTask("a", 1, 1000), Time: -1, RunTime: 1}},
		"unsorted": {{Task: gpuTask("a", 1, 1000), Time: 5, RunTime: 1}, {Task: gpuTask("b", 1, 1000), Time: 4, RunTime: 1}},
		"none":     nil,
	} {
		q, _ := NewQueue("fifo")
		if _, err := Run(c, fgd, q, arr, Config{}, nil); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	cpuOnly, _ := sim.NewCluster([]sim.Node{{Name: "n0", CPU: 64000, Mem: 64000}}, nil)
	q, _ := NewQueue("fifo")
	if _, err := Run(cpuOnly, fgd, q, []Arrival{{Task: sim.Task{Name: "a", CPU: 1}, RunTime: 1}}, Config{}, nil); err == nil {
		t.Error("a cluster without GPUs: no error")
	}
}
