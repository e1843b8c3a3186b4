package tasks

import (
	"fmt"
	"math"
	"sort"

	"github.com/schedrl/schedrl/engine"
	"github.com/schedrl/schedrl/sim"
)

// DefaultCap is the run-time cap the command applies unless told otherwise: 4 hours. Without a
// cap the trace's ten ~144-day tasks carry half its GPU-time, and a resampled workload at any
// offered load is a handful of immortal tasks on an almost idle cluster.
const DefaultCap = 4 * 3600.0

// MaxArrivals bounds a workload's arrivals (ten times the evaluation's 150000): a task count
// above it is refused, and so is a duration whose expected arrivals pass half of it.
const MaxArrivals = 2_000_000

// checkTimes refuses trace times the clock cannot hold: arrivals spread, or run times, beyond
// engine.MaxTime. Tasks are named by their trace name.
func checkTimes(pool []Arrival) error {
	first, last := pool[0], pool[0]
	for _, a := range pool {
		if a.RunTime > engine.MaxTime {
			return fmt.Errorf("workload: task %s runs %g s, at most %g s", a.Task.Name, a.RunTime, float64(engine.MaxTime))
		}
		if a.Time < first.Time {
			first = a
		}
		if a.Time > last.Time {
			last = a
		}
	}
	if last.Time-first.Time > engine.MaxTime {
		return fmt.Errorf("workload: task %s is created %g s after task %s, at most %g s", last.Task.Name, last.Time-first.Time, first.Task.Name, float64(engine.MaxTime))
	}
	return nil
}

// Arrival is one task of a timed workload: its request, when it arrives and how long it runs.
type Arrival struct {
	Task    sim.Task
	Time    float64 // seconds
	RunTime float64 // seconds, after the cap
	Capped  bool    // the trace's run time was longer than the cap
	// Burst marks a task of an injected burst (the readiness probe, WithBurst): its wait is
	// measured apart (Result.BurstDelays), not with the workload's tasks.
	Burst bool
}

// WithBurst returns arrivals with n copies of t (named burst-0, burst-1, ...) arriving at time
// at and running runTime seconds, after the arrivals at the same instant.
func WithBurst(arrivals []Arrival, t sim.Task, n int, at, runTime float64) ([]Arrival, error) {
	if n < 0 || !(at >= 0) || math.IsInf(at, 0) || !(runTime > 0) || math.IsInf(runTime, 0) {
		return nil, fmt.Errorf("burst: %d tasks at %v s running %v s", n, at, runTime)
	}
	k := sort.Search(len(arrivals), func(i int) bool { return arrivals[i].Time > at })
	out := make([]Arrival, 0, len(arrivals)+n)
	out = append(out, arrivals[:k]...)
	for j := range n {
		b := t
		b.Name = fmt.Sprintf("burst-%d", j)
		out = append(out, Arrival{Task: b, Time: at, RunTime: runTime, Burst: true})
	}
	return append(out, arrivals[k:]...), nil
}

// WorkloadConfig says how arrivals are made. Load 0 replays the trace's own creation times
// (every task that ran, in creation order); Load > 0 draws tasks uniformly with replacement
// from those that ran, arriving as a Poisson process whose offered load (GPU-time demanded per
// second over the GPU capacity) is Load. Run times are capped at Cap seconds (0: no cap). The
// workload ends after Count tasks or at time Duration, whichever comes first (0: no limit,
// which only the trace replay allows).
type WorkloadConfig struct {
	Load     float64
	Seed     uint64
	Cap      float64
	Count    int
	Duration float64
}

// Workload is the arrivals (in time order) and what was made of the trace.
type Workload struct {
	Arrivals []Arrival
	// Samples counts the trace tasks with a run time (scheduled and deleted); Pending those
	// that never ran, which are no run-time samples and never arrive.
	Samples, Pending int
	// Capped counts the arrivals whose run time was cut to the cap.
	Capped int
	// OfferedLoad is the load the arrivals actually offer: their GPU-time over the GPU
	// capacity times the arrival span (the duration, or the last arrival's time).
	OfferedLoad float64
	Span        float64
}

// runTime is a trace task's run time (deletion - scheduled), false for a pending task.
func runTime(t sim.Task) (float64, bool) {
	if t.Scheduled < 0 || t.Deletion < t.Scheduled {
		return 0, false
	}
	return float64(t.Deletion - t.Scheduled), true
}

// NewWorkload builds the arrivals from a trace for a cluster of gpuCapMilli milli-GPU.
func NewWorkload(trace []sim.Task, gpuCapMilli int64, cfg WorkloadConfig) (*Workload, error) {
	switch {
	case gpuCapMilli <= 0:
		return nil, fmt.Errorf("workload: the cluster has no GPUs")
	case cfg.Load < 0 || math.IsNaN(cfg.Load) || math.IsInf(cfg.Load, 0):
		return nil, fmt.Errorf("workload: load %v, want 0 (trace timestamps) or a positive offered load", cfg.Load)
	case cfg.Cap < 0 || cfg.Count < 0 || cfg.Duration < 0:
		return nil, fmt.Errorf("workload: negative cap (%v), count (%d) or duration (%v)", cfg.Cap, cfg.Count, cfg.Duration)
	case !(cfg.Cap <= engine.MaxTime) || !(cfg.Duration <= engine.MaxTime):
		return nil, fmt.Errorf("workload: cap %v s, duration %v s: each at most %g s", cfg.Cap, cfg.Duration, float64(engine.MaxTime))
	case cfg.Count > MaxArrivals:
		return nil, fmt.Errorf("workload: task count %d, at most %d", cfg.Count, MaxArrivals)
	case cfg.Load > 0 && cfg.Count == 0 && cfg.Duration == 0:
		return nil, fmt.Errorf("workload: a Poisson workload (load %v) needs a task count or a duration", cfg.Load)
	}
	w := &Workload{}
	var pool []Arrival
	for _, t := range trace {
		r, ok := runTime(t)
		if !ok {
			w.Pending++
			continue
		}
		a := Arrival{Task: t, Time: float64(t.Creation), RunTime: r}
		if cfg.Cap > 0 && r > cfg.Cap {
			a.RunTime, a.Capped = cfg.Cap, true
		}
		pool = append(pool, a)
	}
	w.Samples = len(pool)
	if len(pool) == 0 {
		return nil, fmt.Errorf("workload: no task of the trace has a run time (scheduled_time and deletion_time)")
	}
	if err := checkTimes(pool); err != nil {
		return nil, err
	}
	limit := func(n int, at float64) bool {
		return (cfg.Count > 0 && n >= cfg.Count) || (cfg.Duration > 0 && at >= cfg.Duration)
	}
	if cfg.Load == 0 {
		sort.SliceStable(pool, func(i, j int) bool { return pool[i].Time < pool[j].Time })
		start := pool[0].Time
		for _, a := range pool {
			if limit(len(w.Arrivals), a.Time-start) {
				break
			}
			w.Arrivals = append(w.Arrivals, a)
		}
		w.Span = w.Arrivals[len(w.Arrivals)-1].Time - start
	} else {
		var demand float64 // mean GPU-milli-seconds per task
		for _, a := range pool {
			demand += float64(a.Task.TotalGPUMilli()) * a.RunTime
		}
		demand /= float64(len(pool))
		if demand == 0 {
			return nil, fmt.Errorf("workload: the trace's tasks demand no GPU-time, no load can be offered")
		}
		rate := cfg.Load * float64(gpuCapMilli) / demand // arrivals per second
		if cfg.Duration > 0 && (cfg.Count == 0 || cfg.Count > MaxArrivals/2) && rate*cfg.Duration > MaxArrivals/2 {
			return nil, fmt.Errorf("workload: duration %g s at load %g offers about %.3g arrivals, at most %d: ask for fewer seconds or a task count",
				cfg.Duration, cfg.Load, rate*cfg.Duration, MaxArrivals/2)
		}
		rng := sim.RNG(cfg.Seed, sim.StreamWorkload)
		at := 0.0
		for k := 0; ; k++ {
			at += rng.ExpFloat64() / rate
			if limit(k, at) {
				break
			}
			if k == MaxArrivals {
				return nil, fmt.Errorf("workload: more than %d arrivals within duration %g s", MaxArrivals, cfg.Duration)
			}
			a := pool[rng.IntN(len(pool))]
			a.Task.Name = fmt.Sprintf("%s-%d", a.Task.Name, k)
			a.Time = at
			w.Arrivals = append(w.Arrivals, a)
		}
		w.Span = cfg.Duration
		if w.Span == 0 && len(w.Arrivals) > 0 {
			w.Span = w.Arrivals[len(w.Arrivals)-1].Time
		}
	}
	if len(w.Arrivals) == 0 {
		return nil, fmt.Errorf("workload: no task arrives within the limits (count %d, duration %v)", cfg.Count, cfg.Duration)
	}
	var gpuTime float64
	for _, a := range w.Arrivals {
		gpuTime += float64(a.Task.TotalGPUMilli()) * a.RunTime
		if a.Capped {
			w.Capped++
		}
	}
	if w.Span > 0 {
		w.OfferedLoad = gpuTime / (float64(gpuCapMilli) * w.Span)
	}
	return w, nil
}
