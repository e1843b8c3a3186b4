package finetune

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"

	"github.com/schedrl/schedrl/defrag/online"
	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/family"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/nn"
	"github.com/schedrl/schedrl/tasks"
)

// The defrag-online family's PPO: the defrag agent invoked along timelines.
func init() { Register(online.EnvName, singleAgent(newOnlineEpisodes)) }

// onlineEpisodes are defrag-online episodes: a draw names a timeline of the online world (the
// draw's trace on its seeded sub-cluster, Poisson arrivals at the load its seed picks from
// defrag_online.loads), in which the agent is the defragmenter's method (online.Episode). The
// timeline's no-defrag baseline, which the reward is measured against, is run once per draw.
type onlineEpisodes struct {
	base  *episodes
	sec   config.DefragOnlineConfig
	cfg   online.Config
	opts  env.DefragOptions // per-migration shaping
	loads []float64

	mu        sync.Mutex
	baselines map[Draw]*baselineRun
}

type baselineRun struct {
	once sync.Once
	b    *online.Baseline
	err  error
}

func newOnlineEpisodes(cfg config.Config) (*onlineEpisodes, error) {
	base, err := newEpisodes(cfg.Finetune)
	if err != nil {
		return nil, err
	}
	sec := cfg.DefragOnline
	oc := online.ConfigOf(sec)
	if err := oc.Validate(); err != nil {
		return nil, fmt.Errorf("defrag_online.%w", err)
	}
	if _, err := online.NewPlanner(sec.Expert); err != nil {
		return nil, fmt.Errorf("defrag_online.expert: %w", err)
	}
	held, err := config.ParseSeeds(sec.HeldOut)
	if err != nil {
		return nil, fmt.Errorf("defrag_online.held_out_seeds: %w", err)
	}
	for _, s := range held {
		for _, list := range [][]uint64{base.seeds, base.evalSeeds} {
			for _, t := range list {
				if s == t {
					return nil, fmt.Errorf("finetune.seeds/eval_seeds: %d is a held-out timeline (defrag_online.held_out_seeds)", s)
				}
			}
		}
	}
	d, w := cfg.Defrag, sec.Shaping
	return &onlineEpisodes{base: base, sec: sec, cfg: oc, loads: sec.Loads, baselines: map[Draw]*baselineRun{},
		opts: env.DefragOptions{RewardFragment: w * d.RewardFragment, RewardPending: w * d.RewardPending, MigrationCost: w * d.MigrationCost}}, nil
}

func (e *onlineEpisodes) spec() env.Spec { s, _ := env.SpecOf(env.DefragName); return s }

// valueScale is the defrag network's (defragEpisodes.valueScale): the same network serves both.
func (e *onlineEpisodes) valueScale(float64) float64 { return 30 }

func (e *onlineEpisodes) candidates(config.FinetuneConfig) string { return "" }

func (e *onlineEpisodes) draw(rng *rand.Rand) Draw { return e.base.draw(rng) }

// ranked is false: the held-out measures (delay, migrations, reward) have no single ranking.
func (e *onlineEpisodes) ranked() bool { return false }

func (e *onlineEpisodes) summary(res *Result) map[string]float64 {
	s, f := &res.Start.Defrag.Mean, &res.Final.Defrag.Mean
	res.Summary = family.Summary{Metric: "heldout_whole_gpu_queue_delay_mean_s", Value: f.WholeGPUDelay,
		Note: fmt.Sprintf("%d env steps, %.0f steps/s, held-out whole-GPU delay %.1f -> %.1f s, migrations %.1f -> %.1f",
			res.EnvSteps, res.StepsPerSecond, s.WholeGPUDelay, f.WholeGPUDelay, s.Migrations, f.Migrations),
		Lines: []string{fmt.Sprintf("fine-tuned %s: held-out timelines, whole-GPU queueing delay %.1f -> %.1f s, migrations %.1f -> %.1f, "+
			"reward (queued GPU-hours avoided - downtime) %.2f -> %.2f, after %d env steps (%.0f steps/s, %.0f s)",
			res.Dir, s.WholeGPUDelay, f.WholeGPUDelay, s.Migrations, f.Migrations, s.Reward, f.Reward,
			res.EnvSteps, res.StepsPerSecond, res.Seconds)}}
	metrics := map[string]float64{"env_steps": float64(res.EnvSteps)}
	for k, v := range f.fields() {
		metrics["final_"+k] = v
	}
	return metrics
}

// timeline is draw d's timeline.
func (e *onlineEpisodes) timeline(d Draw) (online.Timeline, error) {
	if d.Trace < 0 || d.Trace >= len(e.base.traces) {
		return online.Timeline{}, fmt.Errorf("episode trace index %d out of range (%d traces)", d.Trace, len(e.base.traces))
	}
	tr := e.base.traces[d.Trace]
	return online.TimelineOf(e.sec, e.base.nodesOf(d), tr.tasks, tr.model, e.loads[d.Seed%uint64(len(e.loads))], d.Seed), nil
}

// baseline is d's no-defrag run, made on first use.
func (e *onlineEpisodes) baseline(d Draw, tl online.Timeline) (*online.Baseline, error) {
	e.mu.Lock()
	b, ok := e.baselines[d]
	if !ok {
		b = &baselineRun{}
		e.baselines[d] = b
	}
	e.mu.Unlock()
	b.once.Do(func() { b.b, b.err = online.RunBaseline(tl, e.cfg) })
	return b.b, b.err
}

// onlineEpisode is one timeline; its outcome is the migrations the agent planned.
type onlineEpisode struct{ *online.Episode }

func (e onlineEpisode) outcome() episodeEnd {
	return episodeEnd{defrag: true, Migrations: e.Migrated}
}

func (e *onlineEpisodes) start(d Draw) (episode, error) {
	tl, err := e.timeline(d)
	if err != nil {
		return nil, err
	}
	b, err := e.baseline(d, tl)
	if err != nil {
		return nil, fmt.Errorf("timeline %+v: baseline: %w", d, err)
	}
	ep, err := online.NewEpisode(tl, e.cfg, e.opts, b)
	if err != nil {
		return nil, fmt.Errorf("timeline %+v: %w", d, err)
	}
	return onlineEpisode{ep}, nil
}

// evaluate runs the network greedily (K = 1) as the method on every held-out timeline of the
// first trace (finetune.eval_seeds on eval_cluster_size nodes) and reports the means of the
// whole-GPU queueing delay, the migrations and the online return (queued GPU-hours avoided
// against no defragmentation minus the downtime cost).
func (e *onlineEpisodes) evaluate(pol policy, _ int) (heldOut, error) {
	planner := online.FromDefrag(nn.NewDefragPolicy(pol.net, pol.dev, "ppo"), e.opts)
	h := heldOut{Seeds: e.base.evalSeeds, Defrag: &defragHeld{Mean: defragMeans{Online: true}}}
	m := &h.Defrag.Mean
	n := float64(len(e.base.evalSeeds))
	for _, seed := range e.base.evalSeeds {
		d := Draw{Seed: seed, Size: e.base.evalSize}
		tl, err := e.timeline(d)
		if err != nil {
			return h, err
		}
		b, err := e.baseline(d, tl)
		if err != nil {
			return h, err
		}
		w, err := tl.Build()
		if err != nil {
			return h, err
		}
		df, err := online.New(e.cfg, planner, w.Placer, seed)
		if err != nil {
			return h, err
		}
		res, err := w.Run(tl, df, 0)
		if err != nil {
			return h, fmt.Errorf("held-out timeline %d: %w", seed, err)
		}
		whole := res.DelayStats(tasks.WholeGPU)
		m.WholeGPUDelay += whole.Mean / n
		m.Migrations += float64(res.Migrations) / n
		m.Reward += (b.Total - res.QueuedGPUSeconds - 2*res.DowntimeGPUSeconds) / 3600 / n
		slog.Debug("finetune: held-out timeline", "seed", seed, "whole_gpu_delay_mean_s", whole.Mean, "migrations", res.Migrations)
	}
	return h, nil
}
