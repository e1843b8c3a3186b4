package eval

import (
	"fmt"
	"strings"

	"github.com/schedrl/schedrl/defrag/online"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/tasks"
)

func init() { registerTimedKind(online.EnvName, defragOnlineKind{}) }

// DefragFactory makes a run's online defragmentation planner (each run its own: a learned
// planner keeps a network's buffers).
type DefragFactory func() (online.Planner, error)

// DefragResolver turns a checkpoint or registry reference into a planner factory, or an
// error that names the reference; the command layer provides it (eval links no network).
type DefragResolver func(PolicyRef) (DefragFactory, error)

// defragOnlineKind is defragmentation in the running cluster (docs/defrag-online.md): the
// timelines of Options.DefragOnline (horizon, warm-up, run-time cap, trigger, budget, cap per
// hour, downtime) at the offered load eval.timed.load, on eval.nodes with each eval.traces
// pod list, one timeline per eval seed. A policy is the defragmenter's method: `none`, an
// online method (greedy, make-room, ...), or a defrag checkpoint or registry reference
// (Options.Learned). Placement is FGD, the queue FIFO with backfill, as
// `schedrl defrag online` runs them.
type defragOnlineKind struct{ timelinesKind }

// localOnly: the world reads the whole defrag_online section.
func (defragOnlineKind) localOnly() {}

type defragOnlineWorld struct {
	sec  config.DefragOnlineConfig
	oc   online.Config
	load float64
	step float64 // time-series spacing
	timelines
	policies []DefragFactory // nil: no defragmenter
	seeds    []uint64
}

// CheckDefragOnline checks what the defrag-online kind reads besides policies and files: the
// offered load (eval.timed.load) and sec's timelines, trigger, budget and downtime. Errors name
// the key; the pipeline calls it before any stage runs.
func CheckDefragOnline(cfg config.EvalConfig, sec *config.DefragOnlineConfig) error {
	if err := checkTimelines(cfg, sec, "timed.kind defrag-online: no defrag_online section (the timelines' horizon, trigger and budget) was given", "defrag-online"); err != nil {
		return err
	}
	if err := online.ConfigOf(*sec).Validate(); err != nil {
		return fmt.Errorf("defrag_online.%w", err)
	}
	return nil
}

func (defragOnlineKind) prepare(cfg config.EvalConfig, seeds []uint64, opts Options) (timedWorld, error) {
	if err := CheckDefragOnline(cfg, opts.DefragOnline); err != nil {
		return nil, err
	}
	sec := *opts.DefragOnline
	w := &defragOnlineWorld{sec: sec, oc: online.ConfigOf(sec), load: cfg.Timed.Load, step: cfg.Timed.SeriesStep, seeds: seeds}
	refs, err := parseTimedPolicies(cfg.Policies, func(name string) error {
		if strings.EqualFold(name, "none") {
			return nil
		}
		_, err := online.NewPlanner(name)
		return err
	})
	if err != nil {
		return nil, err
	}
	if w.timelines, err = loadTimelines(cfg); err != nil {
		return nil, err
	}
	// Last, since resolving may load networks or pull from the registry.
	for _, ref := range refs {
		f, err := w.resolve(ref, learnedResolver[DefragResolver](opts.Learned, online.EnvName))
		if err != nil {
			return nil, err
		}
		w.policies = append(w.policies, f)
	}
	return w, nil
}

// resolve is ref's planner factory: nil for none, a method by name, a network through
// learned.
func (w *defragOnlineWorld) resolve(ref PolicyRef, learned DefragResolver) (DefragFactory, error) {
	switch {
	case ref.Kind == Checkpoint || ref.Kind == Registry:
		if learned == nil {
			return nil, fmt.Errorf("policy %q: defrag checkpoints need a resolver that loads networks (schedrl eval provides one)", ref.Raw)
		}
		return learned(ref)
	case strings.EqualFold(ref.Name, "none"):
		return nil, nil
	}
	return func() (online.Planner, error) { return online.NewPlanner(ref.Name) }, nil
}

// seeded is always true: the seed draws the Poisson arrivals and the tie order.
func (w *defragOnlineWorld) seeded(int) bool { return true }

func (w *defragOnlineWorld) describe() string {
	gpus := 0
	for _, n := range w.nodes {
		gpus += n.GPUs
	}
	return fmt.Sprintf("%d nodes, %d GPUs; offered load %g, arrivals for %g s, warm-up %g s, run times capped at %g s; "+
		"defragmenter every %g s when the queue head waited %g s, budget %d, %d an hour, downtime %g s + %g s per GPU",
		len(w.nodes), gpus, w.load, w.sec.Duration, w.sec.Warmup, w.sec.Cap, w.oc.Every, w.oc.HeadWait, w.oc.Budget,
		w.oc.CapPerHour, w.oc.DowntimeBase, w.oc.DowntimePerGPU)
}

// run is one timeline with the policy as its defragmenter (tasksSeedRun, plus the
// migrations and their downtime).
func (w *defragOnlineWorld) run(policy, workload, seed int) (TimedSeedRun, error) {
	p := w.pods[workload]
	tl := online.TimelineOf(w.sec, w.nodes, p.tasks, p.model, w.load, w.seeds[seed])
	world, err := tl.Build()
	if err != nil {
		return TimedSeedRun{}, err
	}
	var d tasks.Defragmenter
	if f := w.policies[policy]; f != nil {
		planner, err := f()
		if err != nil {
			return TimedSeedRun{}, err
		}
		if d, err = online.New(w.oc, planner, world.Placer, tl.Seed); err != nil {
			return TimedSeedRun{}, err
		}
	}
	res, err := world.Run(tl, d, w.step)
	if err != nil {
		return TimedSeedRun{}, err
	}
	run := tasksSeedRun(res)
	run.Migrations, run.DowntimeS = res.Migrations, res.DowntimeS
	return run, nil
}
