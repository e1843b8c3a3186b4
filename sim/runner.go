package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Placer picks a feasible choice for a task, or reports that none exists. Implementations
// live in package policy.
type Placer interface {
	Name() string
	Place(c *Cluster, t Task, rng *rand.Rand) (Choice, bool)
}

// CurvePoint is one row of the arrival curve.
type CurvePoint struct {
	ArrivedPct   int
	AllocGPUPct  float64
	FragGPU      float64
	FragRatioPct float64
}

// RunResult is the outcome of an arrival run.
type RunResult struct {
	Policy        string
	Tasks, Placed int
	Failed        int
	FailedByKind  map[string]int
	ArrivedMilli  int64
	PlacedMilli   int64
	Final         Metrics
	Curve         []CurvePoint
}

// curveBins accumulates per-event samples by rounded arrived percentage, as the paper's
// analysis does: a curve value is the mean over all events whose arrived GPU request rounds
// (half to even) to that percentage.
type curveBins struct {
	n                  []int
	alloc, frag, ratio []float64
}

func (b *curveBins) add(arrivedPct float64, m Metrics) {
	k := int(math.RoundToEven(arrivedPct))
	for len(b.n) <= k {
		b.n = append(b.n, 0)
		b.alloc, b.frag, b.ratio = append(b.alloc, 0), append(b.frag, 0), append(b.ratio, 0)
	}
	b.n[k]++
	b.alloc[k] += round2(m.GPUAllocPct)
	b.frag[k] += m.FragGPU
	b.ratio[k] += m.FragRatioPct
}

func round2(x float64) float64 { return math.Round(x*100) / 100 }

// points is one row per percentage reached; an empty bin borrows its neighbours' samples.
func (b *curveBins) points() []CurvePoint {
	var out []CurvePoint
	for k := range b.n {
		lo, hi := k, k
		if b.n[k] == 0 {
			lo, hi = max(k-1, 0), min(k+1, len(b.n)-1)
		}
		var n int
		var a, f, r float64
		for j := lo; j <= hi; j++ {
			n += b.n[j]
			a, f, r = a+b.alloc[j], f+b.frag[j], r+b.ratio[j]
		}
		if n == 0 {
			continue
		}
		out = append(out, CurvePoint{ArrivedPct: k, AllocGPUPct: round2(a / float64(n)),
			FragGPU: f / float64(n), FragRatioPct: r / float64(n)})
	}
	return out
}

// RunArrivals runs the paper's protocol on c: tasks arrive in order, each is placed by p (and
// logged, when log is not nil) or fails and is dropped; nothing departs.
func RunArrivals(c *Cluster, tasks []Task, p Placer, rng *rand.Rand, log *LogWriter) (RunResult, error) {
	_, _, capGPU := c.Capacity()
	if capGPU == 0 {
		return RunResult{}, fmt.Errorf("run: cluster has no GPUs")
	}
	res := RunResult{Policy: p.Name(), Tasks: len(tasks), FailedByKind: map[string]int{}}
	var bins curveBins
	for _, t := range tasks {
		res.ArrivedMilli += t.TotalGPUMilli()
		if err := log.Arrive(t); err != nil {
			return res, err
		}
		ch, ok := p.Place(c, t, rng)
		if ok {
			if err := c.Place(t, ch); err != nil {
				return res, fmt.Errorf("run: policy %s chose an infeasible placement: %w", p.Name(), err)
			}
			res.Placed++
			res.PlacedMilli += t.TotalGPUMilli()
			if err := log.Bind(t.Name, c.Node(ch.Node).Name, ch.GPUs); err != nil {
				return res, err
			}
		} else {
			res.Failed++
			res.FailedByKind[t.Kind()]++
			if err := log.Fail(t.Name, "no feasible node"); err != nil {
				return res, err
			}
		}
		bins.add(100*float64(res.ArrivedMilli)/float64(capGPU), c.quickMetrics())
	}
	res.Final = c.Metrics()
	res.Curve = bins.points()
	return res, nil
}

// RunTraceOrder replays the trace's own timeline (see TraceOrder): creations are placed by p
// or fail, deletions remove running tasks (a failed task's deletion is skipped). stop, when
// not nil, ends the run before the first event for which it returns true, leaving e.g. a
// fragmented starting state for defragmentation. The curve is not computed (tasks depart).
func RunTraceOrder(c *Cluster, events []TraceEvent, p Placer, rng *rand.Rand, log *LogWriter, stop func(TraceEvent) bool) (RunResult, error) {
	res := RunResult{Policy: p.Name(), FailedByKind: map[string]int{}}
	for _, ev := range events {
		if stop != nil && stop(ev) {
			break
		}
		t := ev.Task
		if ev.Delete {
			if _, ok := c.Placement(t.Name); !ok {
				continue
			}
			if _, err := c.Remove(t.Name); err != nil {
				return res, err
			}
			if err := log.Delete(t.Name); err != nil {
				return res, err
			}
			continue
		}
		res.Tasks++
		res.ArrivedMilli += t.TotalGPUMilli()
		if err := log.Arrive(t); err != nil {
			return res, err
		}
		ch, ok := p.Place(c, t, rng)
		if !ok {
			res.Failed++
			res.FailedByKind[t.Kind()]++
			if err := log.Fail(t.Name, "no feasible node"); err != nil {
				return res, err
			}
			continue
		}
		if err := c.Place(t, ch); err != nil {
			return res, fmt.Errorf("run: policy %s chose an infeasible placement: %w", p.Name(), err)
		}
		res.Placed++
		res.PlacedMilli += t.TotalGPUMilli()
		if err := log.Bind(t.Name, c.Node(ch.Node).Name, ch.GPUs); err != nil {
			return res, err
		}
	}
	res.Final = c.Metrics()
	return res, nil
}
