package eval

import (
	"fmt"

	"github.com/schedrl/schedrl/defrag/online"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/policy"
	"github.com/schedrl/schedrl/tasks"
)

func init() { registerTimedKind(online.DRREnvName, drrKind{}) }

// drrKind is DRR's setting (docs/drr.md): the openb timed world's timelines of
// Options.DefragOnline (horizon, warm-up, run-time cap) at the offered load eval.timed.load,
// each eval seed on its own sub-cluster of timed.sample_nodes nodes of eval.nodes
// (online.SubCluster), with each eval.traces pod list. A heuristic policy (fgd, ...) places
// every start with no rescheduling; a placement checkpoint or registry reference is the whole
// DRR policy, as `schedrl defrag online --model` runs it: the network places every start and
// online.DRRRescheduler reschedules on DRR's periodic trigger with its budget scaled to the
// sub-cluster (online.PeriodicConfig). A run reports, beside the tasks world's measures, its
// time-averaged fragmentation rate (frag_ratio_mean_pct), migrations and downtime.
type drrKind struct{ timelinesKind }

// localOnly: the world reads the defrag_online section.
func (drrKind) localOnly() {}

type drrWorld struct {
	sec    config.DefragOnlineConfig
	load   float64
	sample int
	step   float64
	timelines
	policies []drrPolicy
	seeds    []uint64
}

// drrPolicy is a heuristic placer's name, or a checkpoint's placer factory.
type drrPolicy struct {
	name    string
	learned PolicyFactory
}

// CheckDRR checks what the drr kind reads besides policies and files: the offered load and
// sec's timelines. Errors name the key; the pipeline calls it before any stage runs.
func CheckDRR(cfg config.EvalConfig, sec *config.DefragOnlineConfig) error {
	return checkTimelines(cfg, sec, "timed.kind drr: no defrag_online section (the timelines' horizon, warm-up and cap) was given", "drr")
}

func (drrKind) prepare(cfg config.EvalConfig, seeds []uint64, opts Options) (timedWorld, error) {
	if err := CheckDRR(cfg, opts.DefragOnline); err != nil {
		return nil, err
	}
	w := &drrWorld{sec: *opts.DefragOnline, load: cfg.Timed.Load, sample: cfg.Timed.SampleNodes, step: cfg.Timed.SeriesStep, seeds: seeds}
	refs, err := parseTimedPolicies(cfg.Policies, func(name string) error {
		_, err := tasks.NewPlacer(name)
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
		p := drrPolicy{name: ref.Raw}
		if ref.Kind == Checkpoint || ref.Kind == Registry {
			if opts.Resolve == nil {
				return nil, fmt.Errorf("policy %q: checkpoints need a resolver that loads networks (schedrl eval provides one)", ref.Raw)
			}
			if p.learned, err = opts.Resolve(ref); err != nil {
				return nil, err
			}
		}
		w.policies = append(w.policies, p)
	}
	return w, nil
}

// seeded is always true: the seed draws the sub-cluster, the Poisson arrivals and the tie order.
func (w *drrWorld) seeded(int) bool { return true }

func (w *drrWorld) describe() string {
	size := len(w.nodes)
	if w.sample > 0 && w.sample < size {
		size = w.sample
	}
	return fmt.Sprintf("%d-node sub-clusters of %d nodes, one per seed; offered load %g, arrivals for %g s, warm-up %g s, run times capped at %g s; "+
		"checkpoints reschedule with %s every %g s (DRR's budget per 64 nodes)", size, len(w.nodes), w.load, w.sec.Duration, w.sec.Warmup,
		w.sec.Cap, online.DRRRescheduler, online.DRREvery)
}

// run is one timeline: the tasks world's measures, the fragmentation rate, the migrations
// and their downtime.
func (w *drrWorld) run(policyIdx, workload, seed int) (TimedSeedRun, error) {
	p, pods, s := w.policies[policyIdx], w.pods[workload], w.seeds[seed]
	nodes := online.SubCluster(w.nodes, w.sample, s)
	tl := online.TimelineOf(w.sec, nodes, pods.tasks, pods.model, w.load, s)
	tl.Placer = p.name
	if p.learned != nil {
		tl.Resolve = func(name string) (policy.Placer, error) { return LearnedPlacer(name, p.learned) }
	}
	world, err := tl.Build()
	if err != nil {
		return TimedSeedRun{}, err
	}
	var d tasks.Defragmenter
	if p.learned != nil {
		planner, err := online.NewPlanner(online.DRRRescheduler)
		if err != nil {
			return TimedSeedRun{}, err
		}
		if d, err = online.New(online.PeriodicConfig(len(nodes), online.DRREvery), planner, world.Placer, s); err != nil {
			return TimedSeedRun{}, err
		}
	}
	res, err := world.Run(tl, d, w.step)
	if err != nil {
		return TimedSeedRun{}, err
	}
	run := tasksSeedRun(res)
	rate := res.FragRatioMeanPct
	run.FragRatioMeanPct, run.Migrations, run.DowntimeS = &rate, res.Migrations, res.DowntimeS
	return run, nil
}
