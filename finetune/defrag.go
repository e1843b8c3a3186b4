package finetune

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"

	"github.com/schedrl/schedrl/defrag"
	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/nn"
	placers "github.com/schedrl/schedrl/policy"
	"github.com/schedrl/schedrl/sim"
)

// The defrag family's PPO: migration plans on fragmented starting states.
func init() { Register(env.DefragName, singleAgent(newDefragEpisodes)) }

// defragEpisodes are migration episodes: a draw names a fragmented starting state (the
// trace's arrival protocol on the draw's seeded sub-cluster, then departures and a pending
// queue, defrag.StateOf), wrapped in env.Defrag. A state takes up to 2 s to build on the full
// cluster, so each is built once and cloned per episode. A migration budget given as a count
// is for the whole node list; a sub-cluster's is scaled by its share of the nodes.
type defragEpisodes struct {
	base   *episodes        // node list, traces, training seeds and sizes, tune
	states defrag.StateSpec // the starting states' protocol; Seed and Pods come per draw
	opts   env.DefragOptions
	budget float64 // a count >= 1 or a fraction of the running tasks

	evalSeeds []uint64
	evalSize  int

	mu    sync.Mutex
	built map[Draw]*startState
}

// startState is a built starting state, shared read-only by the episodes cloned from it.
type startState struct {
	once    sync.Once
	c       *sim.Cluster
	pending []sim.Task
	budget  int
	err     error
}

func newDefragEpisodes(cfg config.Config) (*defragEpisodes, error) {
	base, err := newEpisodes(cfg.Finetune)
	if err != nil {
		return nil, err
	}
	dc := cfg.Defrag
	if _, err := placers.NewPlacer(dc.Placer); err != nil {
		return nil, fmt.Errorf("defrag.placer: %w", err)
	}
	return &defragEpisodes{base: base,
		states: defrag.StateSpec{Nodes: cfg.Finetune.Nodes, Policy: dc.Placer, Tune: cfg.Finetune.Tune,
			Coverage: cfg.Finetune.Coverage, Departures: dc.Departures, MaxPending: dc.MaxPending},
		opts:   env.DefragOptions{RewardFragment: dc.RewardFragment, RewardPending: dc.RewardPending, MigrationCost: dc.MigrationCost},
		budget: dc.Budget, evalSeeds: base.evalSeeds, evalSize: base.evalSize, built: map[Draw]*startState{}}, nil
}

func (e *defragEpisodes) spec() env.Spec { s, _ := env.SpecOf(env.DefragName); return s }

// valueScale is a plan's total: a defrag episode ends within its budget and earns about 0.3
// GPU per migration, so 30, the scale of the behaviour-cloned greedy migrator's head.
func (e *defragEpisodes) valueScale(float64) float64 { return 30 }

func (e *defragEpisodes) candidates(config.FinetuneConfig) string { return "" }

func (e *defragEpisodes) draw(rng *rand.Rand) Draw { return e.base.draw(rng) }

// ranked is false: a plan's outcome has several measures and no single mean to rank by.
func (e *defragEpisodes) ranked() bool { return false }

// summary reports the held-out plans' means at the start and the end.
func (e *defragEpisodes) summary(res *Result) map[string]float64 {
	s, f := &res.Start.Defrag.Mean, &res.Final.Defrag.Mean
	res.Summary = allocSummary(res, fmt.Sprintf("fine-tuned %s: held-out plans, fragment ratio %.2f%% -> %.2f%% (start) / %.2f%% (end), "+
		"pending GPUs placed %.2f -> %.2f, migrations %.1f -> %.1f, after %d env steps (%.0f steps/s, %.0f s)",
		res.Dir, s.FragRatioBefore, s.FragRatioAfter, f.FragRatioAfter, s.PendingGPUs, f.PendingGPUs,
		s.Migrations, f.Migrations, res.EnvSteps, res.StepsPerSecond, res.Seconds))
	metrics := map[string]float64{"env_steps": float64(res.EnvSteps)}
	for k, v := range f.fields() {
		metrics["final_"+k] = v
	}
	return metrics
}

// state is the starting state d names, built on first use.
func (e *defragEpisodes) state(d Draw) (*startState, error) {
	if d.Trace < 0 || d.Trace >= len(e.base.traces) {
		return nil, fmt.Errorf("episode trace index %d out of range (%d traces)", d.Trace, len(e.base.traces))
	}
	e.mu.Lock()
	st, ok := e.built[d]
	if !ok {
		st = &startState{}
		e.built[d] = st
	}
	e.mu.Unlock()
	st.once.Do(func() { st.err = e.build(d, st) })
	return st, st.err
}

// build makes the state of d: the arrival protocol of d's trace tuned to d's nodes, as
// sim.Prepare does for a whole node list, then defrag's departures and pending queue.
func (e *defragEpisodes) build(d Draw, st *startState) error {
	tr := e.base.traces[d.Trace]
	nodes := e.base.nodesOf(d)
	var capGPU int64
	for _, n := range nodes {
		capGPU += int64(n.GPUs) * sim.MilliPerGPU
	}
	work, err := sim.TuneWorkload(tr.tasks, capGPU, e.states.Tune, sim.RNG(d.Seed, sim.StreamWorkload))
	if err != nil {
		return fmt.Errorf("%s: %w", tr.path, err)
	}
	spec := e.states
	spec.Pods, spec.Seed = tr.path, d.Seed
	p := &sim.Prepared{Experiment: sim.Experiment{NodesPath: spec.Nodes, PodsPath: tr.path, Tune: spec.Tune, Seed: d.Seed, Coverage: spec.Coverage},
		Nodes: nodes, Trace: tr.tasks, Model: tr.model, Workload: work}
	snap, err := defrag.StateOf(p, spec)
	if err != nil {
		return fmt.Errorf("defrag state %+v: %w", d, err)
	}
	if st.c, st.pending, err = snap.Build(); err != nil {
		return fmt.Errorf("defrag state %+v: %w", d, err)
	}
	budget := e.budget
	if budget >= 1 && len(nodes) < len(e.base.nodes) {
		// A count is sized for the whole node list: a sub-cluster gets its share, so
		// migrations per node stay those of the full-cluster setting.
		budget = max(1, math.Round(budget*float64(len(nodes))/float64(len(e.base.nodes))))
	}
	st.budget = defrag.BudgetFor(budget, st.c.Running())
	return nil
}

// problem is the planning problem of d's state (the cluster is the shared one: planners and
// replays work on copies).
func (e *defragEpisodes) problem(d Draw) (defrag.Problem, error) {
	st, err := e.state(d)
	if err != nil {
		return defrag.Problem{}, err
	}
	placer, err := placers.NewPlacer(e.states.Policy)
	if err != nil {
		return defrag.Problem{}, err
	}
	opts := e.opts
	opts.Budget = st.budget
	return defrag.Problem{Cluster: st.c, Pending: st.pending, Placer: placer, Options: opts}, nil
}

// defragEpisode is one migration episode; its outcome is the state the plan so far left.
type defragEpisode struct{ *env.Defrag }

func (e defragEpisode) outcome() episodeEnd {
	return episodeEnd{defrag: true, FragRatioPct: e.Cluster().Metrics().FragRatioPct,
		PendingGPUs: float64(e.PlaceableMilli()) / sim.MilliPerGPU, Migrations: e.Used()}
}

func (e *defragEpisodes) start(d Draw) (episode, error) {
	pr, err := e.problem(d)
	if err != nil {
		return nil, err
	}
	return defragEpisode{env.NewDefrag(pr.Cluster.Clone(), pr.Pending, pr.Placer, pr.Options)}, nil
}

// defragHeld is a defrag held-out evaluation: each seed's greedy plan, measured by replaying
// it (defrag.Best), as `schedrl defrag plan --model` would make it.
type defragHeld struct {
	Before []defrag.Outcome `json:"before"`
	After  []defrag.Outcome `json:"after"`
	Mean   defragMeans      `json:"mean"`
}

// defragMeans are held-out means over the seeds' plans.
type defragMeans struct {
	FragRatioBefore float64 `json:"frag_ratio_pct_before"`
	FragRatioAfter  float64 `json:"frag_ratio_pct_after"`
	PendingPlaced   float64 `json:"pending_placed"`
	PendingGPUs     float64 `json:"pending_gpus_placed"`
	Migrations      float64 `json:"migrations"`
	Reward          float64 `json:"reward"`
	// Online marks a defrag-online evaluation (held-out timelines, not snapshots);
	// WholeGPUDelay is its mean queueing delay of whole-GPU tasks.
	Online        bool    `json:"online,omitempty"`
	WholeGPUDelay float64 `json:"whole_gpu_queue_delay_mean_s,omitempty"`
}

// evaluate plans every held-out state with the network, greedy decoding (K = 1), one state
// after another on this goroutine (the planner runs libtorch on the caller's thread).
func (e *defragEpisodes) evaluate(pol policy, _ int) (heldOut, error) {
	planner := nn.NewDefragPolicy(pol.net, pol.dev, "ppo")
	h := heldOut{Seeds: e.evalSeeds, Defrag: &defragHeld{}}
	dh := h.Defrag
	for _, seed := range e.evalSeeds {
		pr, err := e.problem(Draw{Seed: seed, Size: e.evalSize})
		if err != nil {
			return h, err
		}
		plan, err := defrag.Best(pr, planner, 1, seed)
		if err != nil {
			return h, fmt.Errorf("held-out seed %d: %w", seed, err)
		}
		dh.Before, dh.After = append(dh.Before, plan.Before), append(dh.After, plan.After)
		n := float64(len(e.evalSeeds))
		m := &dh.Mean
		m.FragRatioBefore += plan.Before.FragRatioPct / n
		m.FragRatioAfter += plan.After.FragRatioPct / n
		m.PendingPlaced += float64(plan.After.PendingPlaced) / n
		m.PendingGPUs += plan.After.PendingGPUs / n
		m.Migrations += float64(plan.After.MigrationsUsed) / n
		m.Reward += plan.After.Reward / n
	}
	return h, nil
}
