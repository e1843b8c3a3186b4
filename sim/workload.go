package sim

import (
	"fmt"
	"math/rand/v2"
	"sort"
)

// RNG returns the generator for one purpose (stream) of a seeded run, so that e.g. the
// workload does not depend on how many draws a policy makes.
func RNG(seed, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, stream^0x9e3779b97f4a7c15))
}

// Streams of a seeded run.
const (
	StreamWorkload uint64 = 1
	StreamPolicy   uint64 = 2
	StreamTieOrder uint64 = 3
)

// ShuffledOrder is a random permutation of n node indices, for Cluster.SetTieOrder.
func ShuffledOrder(n int, rng *rand.Rand) []int { return rng.Perm(n) }

// SeededTieOrder is the tie order a seeded run uses: the seed's tie-order stream shuffles the
// n nodes, as the FGD paper's simulator does. Everything that must match `schedrl sim` on a
// seed (experiments, fine-tuning episodes) takes it from here.
func SeededTieOrder(n int, seed uint64) []int { return ShuffledOrder(n, RNG(seed, StreamTieOrder)) }

// TuneWorkload builds the paper's arrival sequence: every trace task, plus copies drawn
// uniformly with replacement (named "<name>-tuned-<k>") until the next copy would push the
// total GPU request past ratio x gpuCapMilli (or, if the trace already exceeds that, random
// tasks are dropped until it does not), then everything shuffled with the same generator.
func TuneWorkload(tasks []Task, gpuCapMilli int64, ratio float64, rng *rand.Rand) ([]Task, error) {
	if len(tasks) == 0 {
		return nil, fmt.Errorf("tune: no tasks")
	}
	if ratio <= 0 || gpuCapMilli <= 0 {
		return nil, fmt.Errorf("tune: ratio %v and GPU capacity %d must be positive", ratio, gpuCapMilli)
	}
	out := append([]Task(nil), tasks...)
	var total int64
	for _, t := range out {
		total += t.TotalGPUMilli()
	}
	target := ratio * float64(gpuCapMilli)
	for float64(total) > target && len(out) > 0 {
		i := rng.IntN(len(out))
		total -= out[i].TotalGPUMilli()
		out = append(out[:i], out[i+1:]...)
	}
	for k := 0; float64(total) < target; k++ {
		t := tasks[rng.IntN(len(tasks))]
		if float64(total+t.TotalGPUMilli()) > target {
			break
		}
		t.Name = fmt.Sprintf("%s-tuned-%d", t.Name, k)
		total += t.TotalGPUMilli()
		out = append(out, t)
	}
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out, nil
}

// TraceEvent is a creation (Delete false) or deletion of a trace task at Time.
type TraceEvent struct {
	Time   int64
	Delete bool
	Task   Task
}

// TraceOrder returns the trace's own arrival/departure sequence: each task's creation and
// (when Deletion >= 0) deletion, stably sorted by time, so simultaneous events keep trace order
// with a task's creation before its deletion.
func TraceOrder(tasks []Task) []TraceEvent {
	ev := make([]TraceEvent, 0, 2*len(tasks))
	for _, t := range tasks {
		ev = append(ev, TraceEvent{Time: t.Creation, Task: t})
		if t.Deletion >= 0 {
			ev = append(ev, TraceEvent{Time: t.Deletion, Delete: true, Task: t})
		}
	}
	sort.SliceStable(ev, func(i, j int) bool { return ev[i].Time < ev[j].Time })
	return ev
}
