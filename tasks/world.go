// Package tasks is the openb timed-task world: tasks with a fixed run time (deletion minus
// scheduled time in the trace) arrive at the trace's timestamps or as a Poisson process at a
// chosen offered load, wait in a non-preemptive queue (FIFO with backfill by default), start
// where a placer puts them and leave when their run time is over. It drives package engine's
// clock and measures queueing delay, completion time, GPU allocation and fragment over time.
//
// It is a package of its own, not part of engine, because the engine's one job is the clock
// and the queue that every timed world (this one, Gavel's DL jobs, online defragmentation)
// shares, while workload resampling, queue disciplines and these measures are this world's.
package tasks

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/schedrl/schedrl/engine"
	"github.com/schedrl/schedrl/sim"
)

// Config is how the world runs.
type Config struct {
	// Warmup is the time (seconds) before which arrivals are not measured, nor the allocation.
	Warmup float64
	// SeriesStep is the spacing (seconds) of the time series; 0 records none.
	SeriesStep float64
	// Seed seeds the placer's random draws (placers break ties by the cluster's tie order).
	Seed uint64
	// Defrag, when not nil, is invoked from the first arrival on at the times it asks for
	// and may migrate running tasks (see hook.go); nil runs without defragmentation.
	Defrag Defragmenter
}

// Point is one sample of the time series: the cluster's state at Time.
type Point struct {
	Time         float64
	AllocGPUPct  float64
	FragGPU      float64
	FragRatioPct float64
	Running      int
	Waiting      int
	// FreeGPUs counts the whole idle GPUs; FreeNodes8 the 8-GPU nodes with every GPU idle
	// (readiness: room for whole-GPU and whole-node jobs, CPU and memory aside).
	FreeGPUs, FreeNodes8 int
}

// Result is a run's outcome. Start and Finish are per arrival (NaN for a rejected task: one
// that fits no node even of the empty cluster).
type Result struct {
	Arrivals      []Arrival
	Start, Finish []float64
	Rejected      int
	Warmup        float64
	// LastArrival ends the allocation window [Warmup, LastArrival]; the drain after it is
	// left out, where the cluster empties.
	LastArrival float64
	// Makespan is the last finish minus the first arrival.
	Makespan float64
	// AllocGPUMeanPct and FragGPUMean are time means over the window.
	AllocGPUMeanPct, FragGPUMean float64
	// FragRatioMeanPct is the time mean over the window of the fragment ratio: FGD's fragment
	// of the idle GPU capacity over the idle GPU capacity (0 while no GPU is idle).
	FragRatioMeanPct float64
	// Utilization is the allocated GPU-time over the capacity times the makespan.
	Utilization float64
	Series      []Point
	Events      int64
	// PendingGPUHours is the GPU-time the waiting tasks asked for while waiting, over the
	// window (GPU-hours).
	PendingGPUHours float64
	// QueuedGPUSeconds is the same integral over the whole run (GPU-seconds): what
	// defrag-online rewards are measured in.
	QueuedGPUSeconds float64
	// Migrations counts the migrations started by the defragmenter; DowntimeS is their total
	// downtime (seconds), DowntimeGPUSeconds the downtime times each task's GPUs.
	Migrations         int
	DowntimeS          float64
	DowntimeGPUSeconds float64
}

// MaxSeriesPoints bounds the time series of one run (a week at the default one-minute step
// is about 10000 points); a step so short that the run would pass it fails the run.
const MaxSeriesPoints = 1_000_000

type world struct {
	c      *sim.Cluster
	placer sim.Placer
	rng    *rand.Rand
	q      Queue
	log    *sim.LogWriter
	cfg    Config
	res    *Result
	node   []int
	freed  []int
	fits   map[request]bool // whether a request fits the empty cluster
	empty  *sim.Cluster

	capGPU            float64
	last              float64 // time up to which the integrals run
	allocInt, fragInt float64 // over the window, milli-GPU x s
	fragRatioInt      float64 // over the window, % x s
	usedInt           float64 // over the whole run
	nextSample, first float64
	winStart, winEnd  float64
	err               error

	waitMilli  int64   // GPU milli asked for by the waiting tasks
	pendingInt float64 // over the window, milli-GPU x s
	pendingAll float64 // over the whole run, milli-GPU x s
	hook       hookState
}

// Run runs the arrivals on c (empty, with its tie order set) with placer and queue q, logging
// every event to log when it is not nil (a version-2 log).
func Run(c *sim.Cluster, placer sim.Placer, q Queue, arrivals []Arrival, cfg Config, log *sim.LogWriter) (*Result, error) {
	if len(arrivals) == 0 {
		return nil, fmt.Errorf("run: no arrivals")
	}
	if c.Running() != 0 {
		return nil, fmt.Errorf("run: the cluster already runs %d tasks", c.Running())
	}
	if !(cfg.Warmup >= 0 && cfg.Warmup <= engine.MaxTime) || !(cfg.SeriesStep >= 0 && cfg.SeriesStep <= engine.MaxTime) {
		return nil, fmt.Errorf("run: warm-up %v s, series step %v s: want each in [0, %g]", cfg.Warmup, cfg.SeriesStep, float64(engine.MaxTime))
	}
	for i := 1; i < len(arrivals); i++ {
		if arrivals[i].Time < arrivals[i-1].Time {
			return nil, fmt.Errorf("run: arrival %d (%s) at %v before arrival %d at %v", i, arrivals[i].Task.Name, arrivals[i].Time, i-1, arrivals[i-1].Time)
		}
	}
	if arrivals[0].Time < 0 {
		return nil, fmt.Errorf("run: arrival 0 (%s) at negative time %v", arrivals[0].Task.Name, arrivals[0].Time)
	}
	lastArrival := arrivals[len(arrivals)-1].Time
	if cfg.Warmup >= lastArrival && cfg.Warmup > 0 {
		return nil, fmt.Errorf("run: warm-up %v s is not before the last arrival (%v s): nothing would be measured", cfg.Warmup, lastArrival)
	}
	empty, err := sim.NewCluster(c.Nodes(), nil)
	if err != nil {
		return nil, err
	}
	_, _, capGPU := c.Capacity()
	if capGPU == 0 {
		return nil, fmt.Errorf("run: the cluster has no GPUs")
	}
	n := len(arrivals)
	w := &world{c: c, placer: placer, rng: sim.RNG(cfg.Seed, sim.StreamPolicy), q: q, log: log, cfg: cfg,
		res:  &Result{Arrivals: arrivals, Start: make([]float64, n), Finish: make([]float64, n), Warmup: cfg.Warmup, LastArrival: lastArrival},
		node: make([]int, n), fits: map[request]bool{}, empty: empty,
		capGPU: float64(capGPU), first: arrivals[0].Time, last: arrivals[0].Time,
		winStart: max(cfg.Warmup, arrivals[0].Time), winEnd: lastArrival}
	if b, ok := placer.(interface{ bind(*world) }); ok { // a clairvoyant placer reads the world
		b.bind(w)
	}
	if cfg.SeriesStep > 0 { // the grid is the step's multiples, from the first arrival's
		w.nextSample = math.Floor(arrivals[0].Time/cfg.SeriesStep) * cfg.SeriesStep
	}
	e := engine.New(log)
	if _, err := e.At(arrivals[0].Time, engine.Arrival, 0); err != nil {
		return nil, err
	}
	if cfg.Defrag != nil {
		w.hook.init(arrivals)
		if _, err := e.At(arrivals[0].Time, engine.RoundBoundary, -1); err != nil {
			return nil, err
		}
	}
	if err := e.Run(math.Inf(1), w.handle); err != nil {
		return nil, err
	}
	if q.Waiting() != 0 {
		return nil, fmt.Errorf("run: %d tasks still wait after the last event", q.Waiting())
	}
	r := w.res
	r.Events = e.Handled()
	r.Makespan = w.last - w.first
	if span := w.winEnd - w.winStart; span > 0 {
		r.AllocGPUMeanPct = 100 * w.allocInt / (w.capGPU * span)
		r.FragGPUMean = w.fragInt / (sim.MilliPerGPU * span)
		r.FragRatioMeanPct = w.fragRatioInt / span
	}
	r.PendingGPUHours = w.pendingInt / (sim.MilliPerGPU * 3600)
	r.QueuedGPUSeconds = w.pendingAll / sim.MilliPerGPU
	if r.Makespan > 0 {
		r.Utilization = w.usedInt / (w.capGPU * r.Makespan)
	}
	return r, nil
}

// advance integrates the state held since the last event up to t and samples the series.
func (w *world) advance(t float64) {
	_, _, used := w.c.Used()
	u, f := float64(used), w.c.ClusterFrag()
	var ratio float64
	if idle := w.capGPU - u; idle > 0 {
		ratio = 100 * f / idle
	}
	w.usedInt += u * (t - w.last)
	w.pendingAll += float64(w.waitMilli) * (t - w.last)
	if lo, hi := max(w.last, w.winStart), min(t, w.winEnd); hi > lo {
		w.allocInt += u * (hi - lo)
		w.fragInt += f * (hi - lo)
		w.fragRatioInt += ratio * (hi - lo)
		w.pendingInt += float64(w.waitMilli) * (hi - lo)
	}
	if w.cfg.SeriesStep > 0 {
		// The state since the last event holds on [last, t).
		for ; w.nextSample < t; w.nextSample += w.cfg.SeriesStep {
			if len(w.res.Series) == MaxSeriesPoints {
				w.err = fmt.Errorf("run: series step %g s: more than %d points by %g s; use a longer step", w.cfg.SeriesStep, MaxSeriesPoints, t)
				break
			}
			p := Point{Time: w.nextSample, AllocGPUPct: 100 * u / w.capGPU, FragGPU: f / sim.MilliPerGPU,
				FragRatioPct: ratio, Running: w.c.Running(), Waiting: w.q.Waiting()}
			p.FreeGPUs, p.FreeNodes8 = freeWhole(w.c)
			w.res.Series = append(w.res.Series, p)
		}
	}
	w.last = t
}

// freeWhole counts c's whole idle GPUs and its 8-GPU nodes with every GPU idle.
func freeWhole(c *sim.Cluster) (gpus, nodes8 int) {
	for i := range c.NumNodes() {
		k := c.Free(i).FullGPUs()
		gpus += k
		if k == 8 {
			nodes8++
		}
	}
	return gpus, nodes8
}

func (w *world) handle(e *engine.Engine, ev engine.Event) error {
	w.advance(ev.Time)
	if w.err != nil {
		return w.err
	}
	i := ev.Subject
	switch ev.Kind {
	case engine.Arrival:
		return w.arrive(e, i)
	case engine.Complete:
		a := &w.res.Arrivals[i]
		if _, err := w.c.Remove(a.Task.Name); err != nil {
			return err
		}
		w.freed = append(w.freed, w.node[i])
		e.Trigger()
		return w.log.Complete(a.Task.Name)
	case engine.Trigger:
		w.q.Pass(w.c, w.freed, func(i int) bool { return w.start(e, i) })
		w.freed = w.freed[:0]
		if w.err != nil {
			return w.err
		}
		return w.invoke(e)
	case engine.RoundBoundary:
		w.hook.due = true
		e.Trigger()
		return nil
	case engine.MigrationEnd:
		return w.endMigration(e, i)
	}
	return fmt.Errorf("unexpected event kind %s", ev.Kind)
}

func (w *world) arrive(e *engine.Engine, i int) error {
	arr := w.res.Arrivals
	if i+1 < len(arr) {
		if _, err := e.At(arr[i+1].Time, engine.Arrival, i+1); err != nil {
			return err
		}
	}
	t := arr[i].Task
	if err := w.log.Arrive(t); err != nil {
		return err
	}
	key := requestOf(t)
	fits, ok := w.fits[key]
	if !ok {
		fits = len(w.empty.FeasibleNodes(t, nil)) > 0
		w.fits[key] = fits
	}
	if !fits {
		w.res.Rejected++
		w.res.Start[i], w.res.Finish[i] = math.NaN(), math.NaN()
		return w.log.Fail(t.Name, "fits no node even of the empty cluster")
	}
	w.q.Add(i, t)
	w.waitMilli += t.TotalGPUMilli()
	w.hook.onArrive(i)
	e.Trigger()
	return nil
}

// start places waiting task i if the placer finds room, and schedules its completion.
func (w *world) start(e *engine.Engine, i int) bool {
	if w.err != nil {
		return false
	}
	a := &w.res.Arrivals[i]
	ch, ok := w.placer.Place(w.c, a.Task, w.rng)
	if !ok {
		return false
	}
	if err := w.c.Place(a.Task, ch); err != nil {
		w.err = fmt.Errorf("placer %s chose an infeasible placement: %w", w.placer.Name(), err)
		return false
	}
	now := e.Now()
	w.node[i] = ch.Node
	w.waitMilli -= a.Task.TotalGPUMilli()
	w.res.Start[i], w.res.Finish[i] = now, now+a.RunTime
	id, err := e.At(now+a.RunTime, engine.Complete, i)
	if err != nil {
		w.err = err
		return false
	}
	w.hook.onStart(i, id)
	if err := w.log.Start(a.Task.Name, w.c.Node(ch.Node).Name, ch.GPUs); err != nil {
		w.err = err
		return false
	}
	return true
}
