package tasks

import (
	"fmt"
	"math"

	"github.com/schedrl/schedrl/engine"
	"github.com/schedrl/schedrl/sim"
)

// RunPooled runs the arrivals on a pooled cluster: one pool of the node list's GPU milli in
// which a GPU task starts whenever the free milli of the whole cluster covers its request,
// whatever the node and GPU boundaries (CPU, memory and GPU models are ignored; a CPU-only
// task starts at once). The queue is FIFO with backfill, as the default queue: at each pass
// the waiting tasks are offered in arrival order and each that fits starts. No placement can
// leave less GPU capacity unusable than the pool, so its queueing delays measure what no
// fragmentation at all would give: an idealised bound on what any defragmenter could reach
// with the same arrivals (not a strict one: backfill is not monotone in capacity). Tasks that
// fit no node of the empty real cluster (nodes) are rejected, as Run rejects them, so both
// measure the same tasks. Result has the delays, the window's mean allocation and the
// pending GPU-hours; no fragment, series or migrations.
func RunPooled(nodes []sim.Node, arrivals []Arrival, warmup float64) (*Result, error) {
	if len(arrivals) == 0 {
		return nil, fmt.Errorf("pooled: no arrivals")
	}
	empty, err := sim.NewCluster(nodes, nil)
	if err != nil {
		return nil, err
	}
	_, _, capGPU := empty.Capacity()
	if capGPU == 0 {
		return nil, fmt.Errorf("pooled: the cluster has no GPUs")
	}
	n := len(arrivals)
	last := arrivals[n-1].Time
	if warmup >= last && warmup > 0 {
		return nil, fmt.Errorf("pooled: warm-up %v s is not before the last arrival (%v s): nothing would be measured", warmup, last)
	}
	r := &Result{Arrivals: arrivals, Start: make([]float64, n), Finish: make([]float64, n), Warmup: warmup, LastArrival: last}
	var (
		free              = capGPU
		waiting           []int // arrival order
		waitMilli         int64
		tLast             = arrivals[0].Time
		winStart, winEnd  = max(warmup, arrivals[0].Time), last
		allocInt, pendInt float64
		fits              = map[request]bool{}
	)
	advance := func(t float64) {
		if lo, hi := max(tLast, winStart), min(t, winEnd); hi > lo {
			allocInt += float64(capGPU-free) * (hi - lo)
			pendInt += float64(waitMilli) * (hi - lo)
		}
		tLast = t
	}
	e := engine.New(nil)
	if _, err := e.At(arrivals[0].Time, engine.Arrival, 0); err != nil {
		return nil, err
	}
	err = e.Run(math.Inf(1), func(e *engine.Engine, ev engine.Event) error {
		advance(ev.Time)
		switch i := ev.Subject; ev.Kind {
		case engine.Arrival:
			if i+1 < n {
				if _, err := e.At(arrivals[i+1].Time, engine.Arrival, i+1); err != nil {
					return err
				}
			}
			t := arrivals[i].Task
			key := requestOf(t)
			ok, seen := fits[key]
			if !seen {
				ok = len(empty.FeasibleNodes(t, nil)) > 0
				fits[key] = ok
			}
			if !ok {
				r.Rejected++
				r.Start[i], r.Finish[i] = math.NaN(), math.NaN()
				return nil
			}
			waiting = append(waiting, i)
			waitMilli += t.TotalGPUMilli()
			e.Trigger()
		case engine.Complete:
			free += arrivals[i].Task.TotalGPUMilli()
			e.Trigger()
		case engine.Trigger:
			k := 0
			for _, j := range waiting {
				m := arrivals[j].Task.TotalGPUMilli()
				if m > free {
					waiting[k] = j
					k++
					continue
				}
				free -= m
				waitMilli -= m
				now := e.Now()
				r.Start[j], r.Finish[j] = now, now+arrivals[j].RunTime
				if _, err := e.At(r.Finish[j], engine.Complete, j); err != nil {
					return err
				}
			}
			waiting = waiting[:k]
		default:
			return fmt.Errorf("pooled: unexpected event kind %s", ev.Kind)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	r.Events = e.Handled()
	r.Makespan = tLast - arrivals[0].Time
	if span := winEnd - winStart; span > 0 {
		r.AllocGPUMeanPct = 100 * allocInt / (float64(capGPU) * span)
	}
	r.PendingGPUHours = pendInt / (sim.MilliPerGPU * 3600)
	return r, nil
}
