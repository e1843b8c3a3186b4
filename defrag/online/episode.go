package online

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/schedrl/schedrl/defrag"
	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/sim"
	"github.com/schedrl/schedrl/tasks"
)

// EnvName is the defrag-online environment's name in configs (finetune.env). Its observation
// is the defrag environment's (env.DefragSpec) on the invocation's snapshot, so one network
// serves both, and the online command runs any defrag checkpoint.
const EnvName = "defrag-online"

// Baseline is what the timeline gives without a defragmenter: the GPU-time queued up to each
// trigger check (GPU-seconds, by check time) and in all. An episode's reward is measured
// against it.
type Baseline struct {
	At    map[float64]float64
	Total float64
}

// Queued is the baseline's queued GPU-seconds up to check time t (its total past its last
// check: the baseline stops checking once every task has arrived and none waits).
func (b *Baseline) Queued(t float64) float64 {
	if q, ok := b.At[t]; ok {
		return q
	}
	return b.Total
}

// checks is a defragmenter that never migrates: it records the queued GPU-time at every
// check of cfg's period and hands the check on to next (nil: none).
type checks struct {
	every float64
	next  tasks.Defragmenter
	at    map[float64]float64
	last  float64
}

func (c *checks) Invoke(v *tasks.View) (float64, error) {
	c.last = v.PendingGPUSeconds()
	if c.at != nil {
		c.at[v.Now()] = c.last
	}
	if c.next == nil {
		return v.Now() + c.every, nil
	}
	return c.next.Invoke(v)
}

// RunBaseline runs tl without migrations, checking on cfg's period as a defragmenter would
// (the checks start no migration, so the run is `--method none`'s).
func RunBaseline(tl Timeline, cfg Config) (*Baseline, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	w, err := tl.Build()
	if err != nil {
		return nil, err
	}
	c := &checks{every: cfg.Every, at: map[float64]float64{}}
	if _, err := w.Run(tl, c, 0); err != nil {
		return nil, err
	}
	return &Baseline{At: c.at, Total: c.last}, nil
}

// Episode is the defrag-online environment: one timeline of the online world in which the
// agent is the defragmenter's method. At each invocation (the trigger held and budget is
// left) it plans through the defrag environment on the invocation's snapshot: stage one a
// running task or STOP, stage two its target, up to the invocation's budget; the world then
// starts the migrations and runs on to the next invocation. The episode ends with the
// timeline.
//
// Reward. Each migration step earns the defrag environment's reward with opts' weights
// (shaping; zero weights turn it off). The step that ends an invocation also earns the
// invocation's online reward, in GPU-hours: the queued GPU-time the baseline accumulated
// from this invocation to the next one (or the end) minus what this run accumulated, minus
// the invocation's downtime cost (each migration's downtime x 2 x its GPUs: it holds its old
// place and its target and does not progress). Summed over an episode that is the queued
// GPU-time avoided against no defragmentation, minus the GPU-time migrations cost.
//
// The world runs on its own goroutine and hands each invocation over on a channel, so the
// episode is a pure function of the timeline and the actions; Close ends it early.
type Episode struct {
	base *Baseline
	cfg  Config

	ask  chan invocation
	ans  chan []defrag.Migration
	quit chan struct{}
	end  chan outcome

	inv       invocation
	picked    sim.Placement
	ms        []defrag.Migration
	downtime  float64 // GPU-seconds charged for this invocation's migrations
	queuedAt  float64 // this run's queued GPU-seconds at the invocation
	done      bool
	closed    bool
	res       *tasks.Result
	err       error
	Migrated  int // migrations the agent planned over the episode
	Decisions int // invocations the agent planned
}

// invocation is one planning request of the world.
type invocation struct {
	env    *env.Defrag
	now    float64
	queued float64 // the run's queued GPU-seconds at now
}

type outcome struct {
	res    *tasks.Result
	queued float64 // the run's queued GPU-seconds at its last check
	err    error
}

// errClosed ends the world's goroutine of a closed episode.
var errClosed = errors.New("episode closed")

// NewEpisode starts tl's world with cfg's trigger, budget, cap and downtime, the defrag
// environment's reward weights opts (its Budget is each invocation's) and the baseline of the
// same timeline, and runs it to the first invocation.
func NewEpisode(tl Timeline, cfg Config, opts env.DefragOptions, base *Baseline) (*Episode, error) {
	w, err := tl.Build()
	if err != nil {
		return nil, err
	}
	e := &Episode{base: base, cfg: cfg, ask: make(chan invocation), ans: make(chan []defrag.Migration),
		quit: make(chan struct{}), end: make(chan outcome, 1)}
	d, err := New(cfg, agentPlanner{e, opts}, w.Placer, tl.Seed)
	if err != nil {
		return nil, err
	}
	go func() {
		c := &checks{every: cfg.Every, next: d}
		res, err := w.Run(tl, c, 0)
		e.end <- outcome{res, c.last, err}
	}()
	e.await()
	return e, e.err
}

// agentPlanner hands the snapshot to the episode's agent and waits for its migrations.
type agentPlanner struct {
	e    *Episode
	opts env.DefragOptions
}

func (agentPlanner) Name() string { return EnvName }

func (p agentPlanner) Plan(s Snapshot, budget int, _ *rand.Rand) ([]defrag.Migration, error) {
	opts := p.opts
	opts.Budget = budget
	inner := env.NewDefrag(s.Cluster, s.Waiting, s.Placer, opts)
	if inner.Done() { // nothing can move
		return nil, nil
	}
	select {
	case p.e.ask <- invocation{inner, s.Now, s.Queued}:
	case <-p.e.quit:
		return nil, errClosed
	}
	select {
	case ms := <-p.e.ans:
		return ms, nil
	case <-p.e.quit:
		return nil, errClosed
	}
}

// await runs the world to its next invocation or its end.
func (e *Episode) await() {
	select {
	case inv := <-e.ask:
		e.inv, e.ms, e.downtime, e.queuedAt = inv, nil, 0, inv.queued
	case out := <-e.end:
		e.done, e.res, e.err = true, out.res, out.err
		e.inv = invocation{queued: out.queued}
	}
}

// Spec is the defrag observation layout.
func (e *Episode) Spec() env.Spec { s, _ := env.SpecOf(env.DefragName); return s }

// Done reports whether the timeline has ended.
func (e *Episode) Done() bool { return e.done }

// Observe encodes the pending decision of the current invocation.
func (e *Episode) Observe(obs *env.Observation) { e.inv.env.Observe(obs) }

// Result is the finished timeline's outcome (nil before the end).
func (e *Episode) Result() *tasks.Result { return e.res }

// Step applies a to the current invocation's plan; the step that ends the plan runs the world
// on to the next invocation and carries the online reward.
func (e *Episode) Step(a env.Action) (env.Result, error) {
	if e.done {
		return env.Result{}, fmt.Errorf("the episode has ended")
	}
	in := e.inv.env
	stage := in.Stage()
	if stage == 0 && a.Candidate >= 0 && a.Candidate < len(in.Tasks()) {
		e.picked = in.Tasks()[a.Candidate]
	}
	r, err := in.Step(a)
	if err != nil {
		return env.Result{}, err
	}
	if stage == 1 {
		e.ms = append(e.ms, defrag.MigrationOf(in.Cluster(), e.picked, r.Choice))
		e.downtime += 2 * e.cfg.Downtime(e.picked.Task) * float64(e.picked.Task.TotalGPUMilli()) / sim.MilliPerGPU
	}
	if !in.Done() {
		r.Done = false
		return r, nil
	}
	from, queuedFrom, downtime := e.inv.now, e.queuedAt, e.downtime
	e.Migrated += len(e.ms)
	e.Decisions++
	e.ans <- e.ms
	e.await()
	if e.err != nil {
		return env.Result{}, e.err
	}
	to := e.inv.queued // this run's queued GPU-seconds at the next invocation, or in all
	baseTo := e.base.Total
	if !e.done {
		baseTo = e.base.Queued(e.inv.now)
	}
	avoided := (baseTo - e.base.Queued(from)) - (to - queuedFrom)
	r.Reward += (avoided - downtime) / 3600
	r.Done = e.done
	return r, nil
}

// Close stops the world of an episode left unfinished; a finished one has nothing to stop.
func (e *Episode) Close() {
	if e.done || e.closed {
		return
	}
	e.closed = true
	close(e.quit)
	<-e.end
}
