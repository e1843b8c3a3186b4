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
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"runtime"
	"time"

	"github.com/schedrl/schedrl/eval"
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
	Start, Final   heldOut `json:"-"`
	StartMean      float64 `json:"start_mean_alloc_gpu_pct,omitempty"`
	FinalMean      float64 `json:"final_mean_alloc_gpu_pct,omitempty"`
	// BestMean and BestUpdate are the best held-out evaluation, the start included; its
	// network is in Dir/BestDir unless it is the start's (BestUpdate 0).
	BestMean   float64 `json:"best_mean_alloc_gpu_pct,omitempty"`
	BestUpdate int     `json:"best_update,omitempty"`
	// FinalVsStart pairs the last held-out evaluation with the start's seed by seed
	// (placement): whether PPO changed the greedy policy by more than the seeds' noise.
	FinalVsStart *eval.Paired `json:"final_vs_start,omitempty"`
	// StartDefrag and FinalDefrag are a defrag run's held-out plan means.
	StartDefrag *defragMeans `json:"start_defrag,omitempty"`
	FinalDefrag *defragMeans `json:"final_defrag,omitempty"`
	Resumed     bool         `json:"resumed"`
	Complete    bool         `json:"complete"`
}

// Run fine-tunes cfg.Finetune.From ("none": a fresh network of cfg.Network) into
// cfg.Finetune.Out, resuming from the newest checkpoint there when one exists.
func Run(ctx context.Context, cfg config.Config, o Options) (Result, error) {
	// Grad mode is per OS thread in libtorch; keep every tensor call on this one.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	log := o.Log
	if log == nil {
		log = slog.Default()
	}
	fc := cfg.Finetune
	dev, err := nn.Device(cfg.Device)
	if err != nil {
		return Result{}, err
	}
	eps, err := newSource(cfg)
	if err != nil {
		return Result{}, err
	}
	m, err := newModels(cfg, eps.spec(), dev)
	if err != nil {
		return Result{}, err
	}
	workers := fc.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	opt := nn.NewAdam(m.pol.net.Params(), nn.AdamConfig{Beta1: 0.9, Beta2: 0.999, Eps: fc.AdamEps})
	l := &learner{cfg: fc, pol: m.pol, opt: opt, ref: m.ref}
	pl := &pool{eps: eps, slots: make([]*slot, fc.NumEnvs), workers: workers}
	for i := range pl.slots {
		pl.slots[i] = &slot{}
	}

	perUpdate := fc.NumEnvs * fc.RolloutSteps
	updates := fc.TotalSteps / perUpdate
	res := Result{Dir: fc.Out}
	rec, st, pcg, err := resume(fc.Out, m, opt, pl)
	if err != nil {
		return res, err
	}
	res.Resumed = st.Update > 0
	if pcg == nil {
		pcg = rand.NewPCG(uint64(cfg.Seed), 0x66696e6574756e65) // "finetune"
	}
	rng := rand.New(pcg)
	if st.Update == 0 {
		if err := pl.startFresh(allSlots(fc.NumEnvs), rng); err != nil {
			return res, err
		}
		if fc.Stagger {
			t0 := time.Now()
			if err := pl.stagger(m.pol, rng); err != nil {
				return res, err
			}
			var n int
			for _, s := range pl.slots {
				n += len(s.actions)
			}
			log.Info("finetune staggered the environment copies", "decisions", n, "seconds", time.Since(t0).Seconds())
		}
	}
	defer rec.close()
	if len(st.Evals) == 0 {
		h, err := eps.evaluate(m.deployed(), workers)
		if err != nil {
			return res, err
		}
		st.Evals = append(st.Evals, evalPoint{Update: 0, Held: h})
		if h.Defrag == nil { // best/ exists from the start: the start itself when nothing beats it
			if err := m.best(fc.Out, st, h); err != nil {
				return res, err
			}
		}
		log.Info("finetune held-out start", append(h.logArgs(), "seeds", fc.EvalSeeds)...)
	}
	res.Start = st.Evals[0].Held

	var bar *progressbar.ProgressBar
	if o.Bar != nil {
		bar = progressbar.NewOptions64(int64(updates*perUpdate), progressbar.OptionSetWriter(o.Bar),
			progressbar.OptionSetDescription("finetune"), progressbar.OptionShowCount(),
			progressbar.OptionShowIts(), progressbar.OptionSetItsString("steps"))
		_ = bar.Set64(st.EnvSteps)
	}
	r := newRollout(fc.RolloutSteps, fc.NumEnvs)
	var trainSec, procSec float64 // since the last checkpoint; in this process
	var procSteps int64
	done := 0
	for st.Update < updates {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		if o.StopAfter > 0 && done == o.StopAfter {
			break
		}
		u := st.Update
		// libtorch's generator restarts from a known point every update, so a resumed run
		// draws what an uninterrupted one would (PPO itself samples with the Go PCG).
		nn.Seed(cfg.Seed*1_000_003 + int64(u))
		frac := float64(u) / float64(updates)
		lr := fc.LR
		if fc.AnnealLR {
			lr *= 1 - frac
		}
		kl := fc.KLCoef
		if fc.KLDecay > 0 {
			kl *= math.Max(0, 1-frac/fc.KLDecay)
		}
		if m.ref == nil {
			kl = 0
		}
		t0 := time.Now()
		if err := pl.collect(m.pol, r, rng); err != nil {
			return res, err
		}
		rolloutSec := time.Since(t0).Seconds()
		stats, err := l.update(r, lr, kl, rng)
		if err != nil {
			return res, err
		}
		m.average()
		sec := time.Since(t0).Seconds()
		trainSec += sec
		procSec += sec
		procSteps += int64(perUpdate)
		st.Update++
		st.EnvSteps += int64(perUpdate)
		line := record{Update: st.Update, EnvSteps: st.EnvSteps, LR: lr, KLCoef: kl,
			Episodes: len(r.ended), KLRef: stats.KLRef, ApproxKL: stats.ApproxKL, ClipFrac: stats.ClipFrac,
			Entropy: stats.Entropy, PolicyLoss: stats.PolicyLoss, ValueLoss: stats.ValueLoss, GradNorm: stats.GradNorm,
			Epochs: stats.Epochs, StepsPerSec: float64(perUpdate) / sec, RolloutStepsPerSec: float64(perUpdate) / rolloutSec}
		line.setEpisodes(r.ended)
		line.ExplainedVar = finite(stats.ExplainedVar)
		last := st.Update == updates
		if last || (fc.EvalEvery > 0 && st.Update%fc.EvalEvery == 0) {
			h, err := eps.evaluate(m.deployed(), workers)
			if err != nil {
				return res, err
			}
			st.Evals = append(st.Evals, evalPoint{Update: st.Update, EnvSteps: st.EnvSteps, Held: h})
			line.setHeldOut(h)
			if h.Defrag == nil && bestSoFar(st.Evals) {
				if err := m.best(fc.Out, st, h); err != nil {
					return res, err
				}
			}
		}
		if err := rec.write(line); err != nil {
			return res, err
		}
		log.Info("finetune update", line.logArgs()...)
		if bar != nil {
			_ = bar.Set64(st.EnvSteps)
		}
		done++
		if last || st.Update%fc.CheckpointEvery == 0 {
			st.Seconds += trainSec
			trainSec = 0
			if err := m.checkpoint(fc.Out, opt, snapshot(st, pcg, pl)); err != nil {
				return res, err
			}
		}
	}
	res.Updates, res.EnvSteps = st.Update, st.EnvSteps
	res.Seconds = st.Seconds + trainSec
	if procSec > 0 {
		res.StepsPerSecond = float64(procSteps) / procSec
	}
	res.StartMean = res.Start.Mean
	res.Final = st.Evals[len(st.Evals)-1].Held
	res.FinalMean = res.Final.Mean
	if res.Start.Defrag == nil {
		res.FinalVsStart = eval.PairSeeds("start", res.Final.AllocPct, res.Start.AllocPct)
	}
	best := st.Evals[bestEval(st.Evals)]
	res.BestMean, res.BestUpdate = best.Held.Mean, best.Update
	metrics := map[string]float64{"start_mean_alloc_gpu_pct": res.StartMean,
		"final_mean_alloc_gpu_pct": res.FinalMean, "env_steps": float64(res.EnvSteps)}
	if res.Start.Defrag != nil {
		res.StartDefrag, res.FinalDefrag = &res.Start.Defrag.Mean, &res.Final.Defrag.Mean
		metrics = map[string]float64{"env_steps": float64(res.EnvSteps)}
		for k, v := range res.FinalDefrag.fields() {
			metrics["final_"+k] = v
		}
	}
	if st.Update < updates {
		return res, nil
	}
	res.Complete = true
	if err := m.final(fc.Out, st, metrics); err != nil {
		return res, err
	}
	return res, nil
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
