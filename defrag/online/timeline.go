package online

import (
	"fmt"
	"slices"

	"github.com/schedrl/schedrl/policy"
	"github.com/schedrl/schedrl/sim"
	"github.com/schedrl/schedrl/tasks"
)

// Timeline is one run of the online world: the node list, the pod list (the tasks and their
// run times), the offered load and the seed of the Poisson arrivals and the tie order, the
// arrival horizon, the unmeasured warm-up and the run-time cap, and the placer and queue.
// `schedrl defrag online`, the demonstrations and the defrag-online episodes all build their
// world from one, so a timeline named by the same values is the same world everywhere.
type Timeline struct {
	Nodes                 []sim.Node
	Trace                 []sim.Task
	Model                 *sim.FragModel // the trace's typical shapes (fragment measure)
	Load                  float64
	Seed                  uint64
	Duration, Warmup, Cap float64
	Placer, Queue         string
	// Burst, when > 0, injects that many BurstTask jobs (8 whole GPUs each) running
	// BurstRunTime seconds, all at one seeded instant of the measured window: the readiness
	// probe (how long a burst of large jobs waits).
	Burst        int
	BurstRunTime float64
	// Resolve turns Placer into a placer (nil: tasks.NewPlacer); the command sets one that
	// also loads placement checkpoints.
	Resolve func(name string) (policy.Placer, error)
}

// BurstTask is a burst job: a whole 8-GPU node's GPUs with 32 cores and 128 GiB, which every
// 8-GPU node of the openb node list can hold (the smallest has 64 cores and 256 GiB).
var BurstTask = sim.Task{CPU: 32000, Mem: 131072, NumGPU: 8, GPUMilli: sim.MilliPerGPU}

// Seeded streams of the online world's own draws (apart from sim's workload, policy and tie
// order streams and the methods' streamDefrag).
const (
	streamSubCluster uint64 = 24
	streamBurst      uint64 = 25
)

// BurstTime is the instant of seed's burst: uniform in [warmup, duration).
func BurstTime(seed uint64, warmup, duration float64) float64 {
	return warmup + sim.RNG(seed, streamBurst).Float64()*(duration-warmup)
}

// SubCluster is a seeded sample of size nodes of nodes, in list order (all of them when size
// is 0 or not below their number): DRR's cluster sizes cut from the openb cluster.
func SubCluster(nodes []sim.Node, size int, seed uint64) []sim.Node {
	if size <= 0 || size >= len(nodes) {
		return nodes
	}
	idx := sim.RNG(seed, streamSubCluster).Perm(len(nodes))[:size]
	slices.Sort(idx)
	out := make([]sim.Node, size)
	for k, i := range idx {
		out[k] = nodes[i]
	}
	return out
}

// World is a timeline's empty cluster (its seeded tie order set), arrivals, placer and queue.
type World struct {
	Cluster  *sim.Cluster
	Workload *tasks.Workload
	Placer   policy.Placer
	Queue    tasks.Queue
}

// Build makes the timeline's world.
func (tl Timeline) Build() (*World, error) {
	resolve := tl.Resolve
	if resolve == nil {
		resolve = tasks.NewPlacer
	}
	placer, err := resolve(tl.Placer)
	if err != nil {
		return nil, fmt.Errorf("placer: %w", err)
	}
	q, err := tasks.NewQueue(tl.Queue)
	if err != nil {
		return nil, fmt.Errorf("queue: %w", err)
	}
	c, err := sim.NewCluster(tl.Nodes, tl.Model)
	if err != nil {
		return nil, err
	}
	if err := c.SetTieOrder(sim.SeededTieOrder(len(tl.Nodes), tl.Seed)); err != nil {
		return nil, err
	}
	_, _, capGPU := c.Capacity()
	work, err := tasks.NewWorkload(tl.Trace, capGPU, tasks.WorkloadConfig{Load: tl.Load, Seed: tl.Seed, Cap: tl.Cap, Duration: tl.Duration})
	if err != nil {
		return nil, err
	}
	if tl.Burst > 0 {
		work.Arrivals, err = tasks.WithBurst(work.Arrivals, BurstTask, tl.Burst, BurstTime(tl.Seed, tl.Warmup, tl.Duration), tl.BurstRunTime)
		if err != nil {
			return nil, err
		}
	}
	return &World{Cluster: c, Workload: work, Placer: placer, Queue: q}, nil
}

// Run runs the world with defragmenter d (nil: none) and the time series every seriesStep
// seconds (0: none).
func (w *World) Run(tl Timeline, d tasks.Defragmenter, seriesStep float64) (*tasks.Result, error) {
	return tasks.Run(w.Cluster, w.Placer, w.Queue, w.Workload.Arrivals, tasks.Config{Warmup: tl.Warmup, Seed: tl.Seed, SeriesStep: seriesStep, Defrag: d}, nil)
}
