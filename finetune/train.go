// Package finetune improves a behaviour-cloned policy with PPO in the simulator's placement or
// defrag environment: invalid-action masking, GAE, clipped surrogate, value loss, entropy
// bonus, a decaying KL penalty towards the pretrained policy, Adam with gradient clipping and
// learning-rate annealing. Environment copies step on goroutines with one batched forward per
// step; the network runs on the configured device and the simulator on the CPU. Runs
// checkpoint every few updates and resume after a kill with the weights an uninterrupted run
// would reach.
package finetune

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"runtime"
	"time"

	"github.com/schedrl/schedrl/eval"
	"github.com/schedrl/schedrl/family"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/nn"
	"github.com/schollz/progressbar/v3"
)

// Options are a run's inputs besides the config.
type Options struct {
	// Bar, when not nil, gets a progress bar (the caller decides whether it is a terminal).
	Bar io.Writer
	// Log receives one line per update; nil uses slog.Default().
	Log *slog.Logger
	// StopAfter ends the run cleanly after this many updates in this process (0: run to the
	// budget); the run directory can be resumed. Tests use it to interrupt a run.
	StopAfter int
	// worker, when set, makes the run a rollout worker of another process's run
	// (RolloutWorker) instead.
	worker *rolloutWorker
}

// Result summarises a finished (or stopped) run.
type Result struct {
	Dir      string  `json:"dir"`
	Updates  int     `json:"updates"`
	EnvSteps int64   `json:"env_steps"`
	Seconds  float64 `json:"seconds"`
	// StepsPerSecond is environment steps over the wall time of rollouts and updates
	// (held-out evaluations excluded).
	StepsPerSecond float64 `json:"env_steps_per_second"`
	// Start, Final and Best are the held-out evaluations of the start, the last update and
	// BestUpdate, each with its family's part (heldOut's family field).
	Start     heldOut `json:"start"`
	Final     heldOut `json:"final"`
	Best      heldOut `json:"best"`
	StartMean float64 `json:"start_mean_alloc_gpu_pct,omitempty"`
	FinalMean float64 `json:"final_mean_alloc_gpu_pct,omitempty"`
	// BestMean and BestUpdate are the best held-out evaluation, the start included; its
	// network is in Dir/BestDir unless it is the start's (BestUpdate 0).
	BestMean   float64 `json:"best_mean_alloc_gpu_pct,omitempty"`
	BestUpdate int     `json:"best_update,omitempty"`
	// FinalVsStart pairs the last held-out evaluation with the start's seed by seed
	// (placement): whether PPO changed the greedy policy by more than the seeds' noise.
	FinalVsStart *eval.Paired `json:"final_vs_start,omitempty"`
	Resumed      bool         `json:"resumed"`
	Complete     bool         `json:"complete"`
	// Summary is the run in its family's terms, which the family's trainer writes.
	Summary family.Summary `json:"-"`
}

// allocSummary is the summary of a run ranked by held-out GPU allocation (placement) and the
// default of a single-agent family: the mean before and after.
func allocSummary(res *Result, lines ...string) family.Summary {
	return family.Summary{Metric: "heldout_alloc_gpu_pct", Value: res.FinalMean, Lines: lines,
		Note: fmt.Sprintf("%d env steps, %.0f steps/s, held-out %.2f -> %.2f", res.EnvSteps, res.StepsPerSecond, res.StartMean, res.FinalMean)}
}

// Run fine-tunes cfg.Finetune.From ("none": a fresh network of cfg.Network) into
// cfg.Finetune.Out with the fine-tuning finetune.env's family registered, resuming from the
// newest checkpoint there when one exists.
func Run(ctx context.Context, cfg config.Config, o Options) (Result, error) {
	run, err := trainers.Lookup("finetune.env", cfg.Finetune.Env)
	if err != nil {
		return Result{Dir: cfg.Finetune.Out}, err
	}
	return run(ctx, cfg, o)
}

// RunFunc is a family's fine-tuning, as Run describes it.
type RunFunc func(ctx context.Context, cfg config.Config, o Options) (Result, error)

// trainers are the families' fine-tuning, by finetune.env: each family's file registers its
// own (this package's families a loop through onLoop).
var trainers = family.NewHooks[RunFunc]("finetune")

// Register adds family name's fine-tuning; a second one for the same name panics.
func Register(name string, run RunFunc) { trainers.Register(name, run) }

// onLoop is the fine-tuning of a family that supplies the loop newLoop builds to runLoop.
func onLoop(newLoop func(config.Config, Options) (loop, error)) RunFunc {
	return func(ctx context.Context, cfg config.Config, o Options) (Result, error) {
		return runLoop(ctx, cfg, o, newLoop)
	}
}

// runLoop is PPO's update loop, every family's: each update is the steps of docs/finetune.md's
// "one update": schedule, rollout, update, then evaluate-and-keep-best and checkpoint; result
// sums the run up.
func runLoop(ctx context.Context, cfg config.Config, o Options, newLoop func(config.Config, Options) (loop, error)) (Result, error) {
	// Grad mode is per OS thread in libtorch; keep every tensor call on this one.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	t, err := newLoop(cfg, o)
	if err != nil {
		return Result{Dir: cfg.Finetune.Out}, err
	}
	defer t.close()
	if err := t.begin(); err != nil {
		return Result{Dir: cfg.Finetune.Out}, err
	}
	fc, c := cfg.Finetune, t.counters()
	bar := progressBar(o.Bar, c)
	for done := 0; c.st.Update < c.updates && (o.StopAfter == 0 || done < o.StopAfter); done++ {
		if err := ctx.Err(); err != nil {
			return Result{Dir: fc.Out}, err
		}
		// One update: schedule, rollout, PPO update (timed, counted), the family's notes.
		line, err := c.timedUpdate(cfg.Seed, fc, t.haveRef(), t.rollout, t.update)
		if err != nil {
			return Result{Dir: fc.Out}, err
		}
		t.note(&line)
		if c.last() || (fc.EvalEvery > 0 && c.st.Update%fc.EvalEvery == 0) {
			h, err := t.evaluateAndKeepBest()
			if err != nil {
				return Result{Dir: fc.Out}, err
			}
			line.setHeldOut(h)
		}
		if err := c.rec.write(line); err != nil {
			return Result{Dir: fc.Out}, err
		}
		c.log.Info("finetune update", line.logArgs()...)
		if c.last() || c.st.Update%fc.CheckpointEvery == 0 {
			c.st.Seconds += c.trainSec
			c.trainSec = 0
			if err := t.checkpoint(); err != nil {
				return Result{Dir: fc.Out}, err
			}
		}
		if bar != nil {
			_ = bar.Set64(c.st.EnvSteps)
		}
	}
	return t.result()
}

// singleAgent is the fine-tuning of a family whose episodes src builds: the single-agent
// trainer below in runLoop.
func singleAgent[S episodeSource](src func(config.Config) (S, error)) RunFunc {
	learn := onLoop(func(cfg config.Config, o Options) (loop, error) {
		eps, err := src(cfg)
		if err != nil {
			return nil, err
		}
		return newTrainer(cfg, o, eps)
	})
	return func(ctx context.Context, cfg config.Config, o Options) (Result, error) {
		if o.worker == nil {
			return learn(ctx, cfg, o)
		}
		eps, err := src(cfg)
		if err != nil {
			return Result{}, err
		}
		return Result{}, o.worker.run(ctx, eps)
	}
}

// loop is a run in progress, what a family supplies to Run's update loop: the single-agent
// trainer below (placement, defrag, defrag-online) or the multi-agent one (maifs.go).
type loop interface {
	// begin starts a fresh run's episodes and evaluates the start network once per run.
	begin() error
	// counters are the run's state, budget, record and clock.
	counters() *clock
	// haveRef reports whether a pretrained reference prices the KL penalty.
	haveRef() bool
	// rollout steps every environment copy rollout_steps times with the trained network.
	rollout() error
	// update is PPO's epochs over the rollout at the learning rate and KL coefficient.
	update(lr, kl float64) (updateStats, error)
	// note adds the rollout's ended episodes (and the family's own statistics) to the line.
	note(line *record)
	// evaluateAndKeepBest evaluates the deployed network on the held-out episodes and keeps
	// it in BestDir when it is the best so far.
	evaluateAndKeepBest() (heldOut, error)
	// checkpoint writes a resumable checkpoint.
	checkpoint() error
	result() (Result, error)
	close()
}

// trainer is one run in progress: the episode source, the networks and their optimiser, the
// environment copies, and the state a checkpoint saves.
type trainer struct {
	cfg     config.Config
	eps     episodeSource
	m       *models
	opt     *nn.Adam
	learner *learner
	pool    *pool
	workers int
	remote  *remoteRollouts // nil: the copies step in pool

	clock
	pcg *rand.PCG
	rng *rand.Rand // PPO's sampling, shuffling and episode draws
	r   *rollout
	res Result
}

// clock is what both trainers count the same way: the state a checkpoint saves, the budget,
// and the seconds of rollouts and updates; and where Run writes each update's line.
type clock struct {
	log                *slog.Logger
	rec                *recorder
	st                 runState
	perUpdate, updates int     // env steps per update; updates in the budget
	trainSec, procSec  float64 // rollout and update time since the last checkpoint; in this process
	procSteps          int64
}

// newTrainer builds the run's parts and resumes from out's newest checkpoint, if any.
func newTrainer(cfg config.Config, o Options, eps episodeSource) (*trainer, error) {
	fc := cfg.Finetune
	t := &trainer{cfg: cfg, eps: eps, workers: fc.Workers, clock: clock{log: o.Log, perUpdate: fc.NumEnvs * fc.RolloutSteps}, res: Result{Dir: fc.Out}}
	if t.log == nil {
		t.log = slog.Default()
	}
	if t.workers <= 0 {
		t.workers = runtime.GOMAXPROCS(0)
	}
	t.updates = fc.TotalSteps / t.perUpdate
	dev, err := nn.Device(cfg.Device)
	if err != nil {
		return nil, err
	}
	if t.m, err = newModels(cfg, t.eps, dev); err != nil {
		return nil, err
	}
	t.opt = nn.NewAdam(t.m.pol.net.Params(), nn.AdamConfig{Beta1: 0.9, Beta2: 0.999, Eps: fc.AdamEps})
	t.learner = &learner{cfg: fc, pol: t.m.pol, opt: t.opt, ref: t.m.ref}
	t.pool = &pool{eps: t.eps, slots: make([]*slot, fc.NumEnvs), workers: t.workers}
	for i := range t.pool.slots {
		t.pool.slots[i] = &slot{}
	}
	if t.rec, t.st, t.pcg, err = resume(fc.Out, t.m, t.opt, t.pool); err != nil {
		return nil, err
	}
	t.res.Resumed = t.st.Update > 0
	if t.pcg == nil {
		t.pcg = rand.NewPCG(uint64(cfg.Seed), 0x66696e6574756e65) // "finetune"
	}
	t.rng = rand.New(t.pcg)
	t.r = newRollout(fc.RolloutSteps, fc.NumEnvs)
	if fc.RolloutWorkers > 0 {
		if t.remote, err = newRemoteRollouts(cfg, t.st, t.m.pol.net.Arch, t.log); err != nil {
			t.rec.close()
			return nil, err
		}
	}
	return t, nil
}

// begin starts a fresh run's episodes (staggered when configured) and evaluates the start
// network once per run.
func (t *trainer) begin() error {
	fc := t.cfg.Finetune
	if t.st.Update == 0 && t.remote == nil { // rollout workers start their own
		if err := t.pool.startFresh(allSlots(fc.NumEnvs), t.rng); err != nil {
			return err
		}
		if fc.Stagger {
			t0 := time.Now()
			if err := t.pool.stagger(t.m.pol, t.rng); err != nil {
				return err
			}
			var n int
			for _, s := range t.pool.slots {
				n += len(s.actions)
			}
			t.log.Info("finetune staggered the environment copies", "decisions", n, "seconds", time.Since(t0).Seconds())
		}
	}
	if len(t.st.Evals) == 0 {
		h, err := t.evaluateAndKeepBest()
		if err != nil {
			return err
		}
		t.log.Info("finetune held-out start", append(h.logArgs(), "seeds", fc.EvalSeeds)...)
	}
	t.res.Start = t.st.Evals[0].Held
	return nil
}

func progressBar(w io.Writer, c *clock) *progressbar.ProgressBar {
	if w == nil {
		return nil
	}
	bar := progressbar.NewOptions64(int64(c.updates*c.perUpdate), progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription("finetune"), progressbar.OptionShowCount(),
		progressbar.OptionShowIts(), progressbar.OptionSetItsString("steps"))
	_ = bar.Set64(c.st.EnvSteps)
	return bar
}

func (c *clock) counters() *clock { return c }

func (t *trainer) close() {
	if t.remote != nil {
		t.remote.close(t.st.Update)
	}
	t.rec.close()
}

func (t *trainer) haveRef() bool { return t.m.ref != nil }

func (t *trainer) note(line *record) { line.setEpisodes(t.r.ended) }

// timedUpdate is the part of an update both trainers share: libtorch's generator restarted
// from a known point (so a resumed run draws what an uninterrupted one would; PPO itself
// samples with the Go PCG), the schedule, the rollout and the update timed, the counters
// advanced, and the run record's line with the update's statistics (episodes are the caller's).
func (c *clock) timedUpdate(seed int64, fc config.FinetuneConfig, haveRef bool, rollout func() error,
	update func(lr, kl float64) (updateStats, error)) (record, error) {
	nn.Seed(seed*1_000_003 + int64(c.st.Update))
	lr, kl := schedule(fc, c.st.Update, c.updates, haveRef)
	t0 := time.Now()
	if err := rollout(); err != nil {
		return record{}, err
	}
	rolloutSec := time.Since(t0).Seconds()
	stats, err := update(lr, kl)
	if err != nil {
		return record{}, err
	}
	sec := time.Since(t0).Seconds()
	c.trainSec += sec
	c.procSec += sec
	c.procSteps += int64(c.perUpdate)
	c.st.Update++
	c.st.EnvSteps += int64(c.perUpdate)
	line := record{Update: c.st.Update, EnvSteps: c.st.EnvSteps, LR: lr, KLCoef: kl,
		KLRef: stats.KLRef, ApproxKL: stats.ApproxKL, ClipFrac: stats.ClipFrac,
		Entropy: stats.Entropy, PolicyLoss: stats.PolicyLoss, ValueLoss: stats.ValueLoss, GradNorm: stats.GradNorm,
		Epochs: stats.Epochs, StepsPerSec: float64(c.perUpdate) / sec, RolloutStepsPerSec: float64(c.perUpdate) / rolloutSec}
	line.ExplainedVar = finite(stats.ExplainedVar)
	return line, nil
}

// last reports whether the update just finished is the budget's last.
func (c *clock) last() bool { return c.st.Update == c.updates }

// schedule is update's learning rate and KL coefficient: the learning rate annealed linearly
// to 0 (anneal_lr), the KL penalty decaying linearly to 0 over the first kl_decay of the
// updates, and off without a pretrained reference.
func schedule(fc config.FinetuneConfig, update, updates int, haveRef bool) (lr, kl float64) {
	frac := float64(update) / float64(updates)
	lr = fc.LR
	if fc.AnnealLR {
		lr *= 1 - frac
	}
	kl = fc.KLCoef
	if fc.KLDecay > 0 {
		kl *= math.Max(0, 1-frac/fc.KLDecay)
	}
	if !haveRef {
		kl = 0
	}
	return lr, kl
}

// rollout steps every environment copy rollout_steps times with the trained network.
func (t *trainer) rollout() error {
	if t.remote != nil {
		return t.remote.collect(t.m.pol, t.st.Update, t.r)
	}
	return t.pool.collect(t.m.pol, t.r, t.rng)
}

// update is PPO's epochs over the rollout, then the Polyak average's move.
func (t *trainer) update(lr, kl float64) (updateStats, error) {
	stats, err := t.learner.update(t.r, lr, kl, t.rng)
	if err != nil {
		return stats, err
	}
	t.m.average()
	return stats, nil
}

// evaluateAndKeepBest evaluates the deployed network on the held-out episodes and, where the
// environment ranks networks by it, writes it as BestDir when it beats every earlier
// evaluation (at the start, the start network itself).
func (t *trainer) evaluateAndKeepBest() (heldOut, error) {
	h, err := t.eps.evaluate(t.m.deployed(), t.workers)
	if err != nil {
		return h, err
	}
	t.st.Evals = append(t.st.Evals, evalPoint{Update: t.st.Update, EnvSteps: t.st.EnvSteps, Held: h})
	if t.eps.ranked() && bestSoFar(t.st.Evals) {
		if err := t.m.best(t.cfg.Finetune.Out, t.st, h); err != nil {
			return h, err
		}
	}
	return h, nil
}

// checkpoint writes a resumable checkpoint (Run calls it every checkpoint_every updates and
// after the last).
func (t *trainer) checkpoint() error {
	st := snapshot(t.st, t.pcg, t.pool)
	if t.remote != nil {
		t.remote.snapshot(&st)
	}
	return t.m.checkpoint(t.cfg.Finetune.Out, t.opt, st)
}

// result sums the run up and, when the budget is spent, makes the run directory the
// fine-tuned checkpoint.
func (t *trainer) result() (Result, error) {
	res := t.sum(t.res)
	res.StartMean, res.FinalMean, res.BestMean = res.Start.Mean, res.Final.Mean, res.Best.Mean
	metrics := t.eps.summary(&res)
	if !res.Complete {
		return res, nil
	}
	return res, t.m.final(t.cfg.Finetune.Out, t.st, metrics)
}

// sum is the part of a run's result both trainers count the same way: res (the start's
// evaluation in it) with the updates, steps, times, final and best evaluations and whether
// the budget is spent.
func (c *clock) sum(res Result) Result {
	st := c.st
	res.Updates, res.EnvSteps = st.Update, st.EnvSteps
	res.Seconds = st.Seconds + c.trainSec
	if c.procSec > 0 {
		res.StepsPerSecond = float64(c.procSteps) / c.procSec
	}
	res.Final = st.Evals[len(st.Evals)-1].Held
	best := st.Evals[bestEval(st.Evals)]
	res.Best, res.BestUpdate = best.Held, best.Update
	res.Complete = st.Update >= c.updates
	return res
}

// bestEval is the index of the first evaluation with the highest mean.
func bestEval(evals []evalPoint) int {
	best := 0
	for i, e := range evals {
		if e.Held.Mean > evals[best].Held.Mean {
			best = i
		}
	}
	return best
}

// bestSoFar reports whether the last evaluation's mean beats every earlier one's.
func bestSoFar(evals []evalPoint) bool { return bestEval(evals) == len(evals)-1 }

func allSlots(n int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	return idx
}

// snapshot is the run state after the update just finished.
func snapshot(st runState, pcg *rand.PCG, pl *pool) runState {
	st.RNG, _ = pcg.MarshalBinary()
	st.Slots = make([]slotState, len(pl.slots))
	for i, s := range pl.slots {
		st.Slots[i] = slotState{Draw: s.draw, Actions: append([]int32(nil), s.actions...)}
	}
	return st
}
