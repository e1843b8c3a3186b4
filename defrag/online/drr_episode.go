package online

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/policy"
	"github.com/schedrl/schedrl/sim"
	"github.com/schedrl/schedrl/tasks"
)

// DRREnvName is the DRR placement environment's name in configs (finetune.env): placement in
// the openb timed world, judged on the time-integrated fragmentation rate (docs/drr.md). Its
// observation and actions are the placement environment's, so its checkpoints are placement
// checkpoints and serve wherever those do.
const DRREnvName = "drr"

// DRRQoSWeight prices queueing against fragmentation in the DRR reward: a share q of the
// cluster's GPUs waiting for an hour costs as much as a fragmentation rate of q for an hour.
// Without it the rate rewards idling (a placer that keeps multi-GPU work waiting leaves less
// idle capacity fragmented: docs/results/2026-12-06-drr-placement-ceiling.md).
const DRRQoSWeight = 1.0

// drrTick is the spacing (seconds) of the rate samples the reward integrates: the world calls
// the placer without its clock, so the episode samples the rate on a defragmenter's schedule.
const drrTick = 60.0

// DRREpisode is one timeline of the openb timed world in which the agent places every start
// (no rescheduling). Each step's reward is minus the fragmentation rate (a fraction) integrated
// over the simulated hours since the previous decision, sampled every drrTick seconds, minus
// DRRQoSWeight x the queued GPU share integrated over the same hours; an episode's return is
// minus the time-integrated rate and queueing of the whole run (warm-up and drain included).
// The world runs on its own goroutine, as Episode's does.
type DRREpisode struct {
	ask  chan struct{}
	ans  chan env.Action
	quit chan struct{}
	end  chan drrOutcome

	pl        *env.Placement
	live      *sim.Cluster
	arrivedAt map[string]int64
	capGPU    float64 // GPUs
	fgd       policy.Placer
	rng       *rand.Rand // the world's draws at the pending decision (FGD breaks some ties with them)

	// Integrals since the start, written by the world's goroutine (the tick) and read by the
	// agent's after a hand-over on a channel.
	rateHours, queuedGPUSeconds float64
	lastRate, lastQueued        float64 // at the previous decision

	done, closed bool
	res          *tasks.Result
	err          error
	Decisions    int
}

type drrOutcome struct {
	res *tasks.Result
	err error
}

// NewDRREpisode starts tl's world with the agent as its placer (tl.Placer is ignored) and runs
// it to the first decision.
func NewDRREpisode(tl Timeline, opts env.Options) (*DRREpisode, error) {
	fgd, err := policy.NewPlacer("fgd")
	if err != nil {
		return nil, err
	}
	e := &DRREpisode{ask: make(chan struct{}), ans: make(chan env.Action), quit: make(chan struct{}),
		end: make(chan drrOutcome, 1), arrivedAt: map[string]int64{}, fgd: fgd}
	tl.Resolve = func(string) (policy.Placer, error) { return drrAgent{e}, nil }
	w, err := tl.Build()
	if err != nil {
		return nil, err
	}
	e.live = w.Cluster
	e.pl = env.NewPlacement(w.Cluster, opts)
	_, _, capMilli := w.Cluster.Capacity()
	e.capGPU = float64(capMilli) / sim.MilliPerGPU
	var arrived int64
	for _, a := range w.Workload.Arrivals {
		e.arrivedAt[a.Task.Name] = arrived
		arrived += a.Task.TotalGPUMilli()
	}
	go func() {
		res, err := w.Run(tl, &drrTicker{e}, 0)
		e.end <- drrOutcome{res, err}
	}()
	e.await()
	return e, e.err
}

// drrAgent is the world's placer: on the live cluster it hands the decision to the agent.
type drrAgent struct{ e *DRREpisode }

func (drrAgent) Name() string { return DRREnvName }

func (a drrAgent) Score(c *sim.Cluster, t sim.Task, ch sim.Choice) float64 {
	return a.e.fgd.Score(c, t, ch)
}

func (a drrAgent) Place(c *sim.Cluster, t sim.Task, rng *rand.Rand) (sim.Choice, bool) {
	e := a.e
	if c != e.live {
		return e.fgd.Place(c, t, rng)
	}
	if e.pl.Present(t, e.arrivedAt[t.Name]) == 0 {
		return sim.Choice{}, false
	}
	e.rng = rng
	select {
	case e.ask <- struct{}{}:
	case <-e.quit:
		return sim.Choice{}, false
	}
	var act env.Action
	select {
	case act = <-e.ans:
	case <-e.quit:
		return sim.Choice{}, false
	}
	ch, err := e.pl.Choice(act)
	if err != nil { // the episode's Step checked the action against the mask
		return sim.Choice{}, false
	}
	return ch, true
}

// drrTicker integrates the rate and the queue every drrTick seconds; it moves nothing.
type drrTicker struct{ e *DRREpisode }

func (t *drrTicker) Invoke(v *tasks.View) (float64, error) {
	select {
	case <-t.e.quit:
		return 0, errDRRClosed
	default:
	}
	t.e.rateHours += v.Cluster().Metrics().FragRatioPct / 100 * drrTick / 3600
	t.e.queuedGPUSeconds = v.PendingGPUSeconds()
	return v.Now() + drrTick, nil
}

var errDRRClosed = errors.New("drr episode closed")

func (e *DRREpisode) await() {
	select {
	case <-e.ask:
	case out := <-e.end:
		e.done, e.res, e.err = true, out.res, out.err
	}
}

// Spec is the placement observation layout.
func (e *DRREpisode) Spec() env.Spec { return e.pl.Spec() }

// Done reports whether the timeline has ended.
func (e *DRREpisode) Done() bool { return e.done }

// Result is the finished timeline's outcome (nil before the end).
func (e *DRREpisode) Result() *tasks.Result { return e.res }

// Observe encodes the pending start.
func (e *DRREpisode) Observe(obs *env.Observation) { e.pl.Observe(obs) }

// Step starts the pending task on a's node (the GPUs the placement environment picks) and runs
// the world to the next decision.
func (e *DRREpisode) Step(a env.Action) (env.Result, error) {
	if e.done || e.closed {
		return env.Result{}, fmt.Errorf("the episode has ended")
	}
	if a.Candidate < 0 || a.Candidate >= e.live.NumNodes() || !e.pl.Mask(a.Candidate) {
		return env.Result{}, fmt.Errorf("action %d: not a feasible node", a.Candidate)
	}
	e.ans <- a
	e.Decisions++
	e.await()
	if e.err != nil {
		return env.Result{}, e.err
	}
	rate, queued := e.rateHours-e.lastRate, (e.queuedGPUSeconds-e.lastQueued)/3600/e.capGPU
	e.lastRate, e.lastQueued = e.rateHours, e.queuedGPUSeconds
	return env.Result{Reward: -(rate + DRRQoSWeight*queued), Done: e.done}, nil
}

// Close stops the world of an episode left unfinished.
func (e *DRREpisode) Close() {
	if e.done || e.closed {
		return
	}
	e.closed = true
	close(e.quit)
	<-e.end
}
