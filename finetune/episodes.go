package finetune

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/eval"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/sim"
)

// streamSubset is the seeded stream that picks a sub-cluster's nodes, apart from sim's
// workload and policy streams so the subset does not shift the workload.
const streamSubset uint64 = 3

// Draw names one training episode; the episode is a pure function of it, which is what lets a
// resumed run rebuild an interrupted episode by replaying its actions.
type Draw struct {
	Trace int    `json:"trace"`
	Seed  uint64 `json:"seed"`
	Size  int    `json:"size"` // nodes; 0 is the whole node list
}

// trace is one pod list loaded once and shared read-only by every episode.
type trace struct {
	path  string
	tasks []sim.Task
	model *sim.FragModel
}

// episodeSource is one environment's episodes: the training draws, how a draw becomes an
// episode, and the held-out evaluation. Rollouts and PPO updates are the same for every source.
type episodeSource interface {
	spec() env.Spec
	// draw picks the next training episode.
	draw(rng *rand.Rand) Draw
	// start builds the episode d names.
	start(d Draw) (episode, error)
	// evaluate runs the policy greedily on the held-out episodes.
	evaluate(pol policy, workers int) (heldOut, error)
	// ranked reports whether an evaluation's Mean ranks networks, so that the run keeps the
	// best one in BestDir (placement: the mean GPU allocation).
	ranked() bool
	// summary fills the environment's part of res from res.Start and res.Final and returns
	// the metrics the fine-tuned checkpoint records.
	summary(res *Result) map[string]float64
}

// episode is an environment copy as a rollout steps it.
type episode interface {
	Observe(obs *env.Observation)
	Step(a env.Action) (env.Result, error)
	Done() bool
	// outcome measures the episode where it stands (at its end, in a rollout).
	outcome() episodeEnd
}

// The placement family's PPO: arrival episodes over the configured mix.
func init() {
	Register(env.PlacementName, singleAgent(func(cfg config.Config) (*episodes, error) { return newEpisodes(cfg.Finetune) }))
}

// episodes builds placement training and held-out episodes from the configured mix.
type episodes struct {
	nodes  []sim.Node
	traces []trace
	seeds  []uint64
	sizes  []int
	tune   float64
	opts   env.Options

	evalSeeds []uint64
	evalSize  int
}

// placementEpisode is an arrival sequence; its outcome is the GPU allocation.
type placementEpisode struct{ *env.Arrivals }

func (e placementEpisode) outcome() episodeEnd {
	return episodeEnd{AllocPct: e.Cluster().Metrics().GPUAllocPct}
}

func (e *episodes) spec() env.Spec { s, _ := env.SpecOf(env.PlacementName); return s }

func (e *episodes) start(d Draw) (episode, error) {
	ep, err := e.build(d)
	if err != nil {
		return nil, err
	}
	return placementEpisode{ep}, nil
}

func (e *episodes) evaluate(pol policy, workers int) (heldOut, error) {
	return evaluate(pol, e, e.evalSeeds, e.evalSize, workers)
}

func (e *episodes) ranked() bool { return true }

// summary pairs the last evaluation with the start's seed by seed: whether PPO changed the
// greedy policy by more than the seeds' noise.
func (e *episodes) summary(res *Result) map[string]float64 {
	res.FinalVsStart = eval.PairSeeds("start", res.Final.AllocPct, res.Start.AllocPct)
	d := res.FinalVsStart
	lines := []string{fmt.Sprintf("fine-tuned %s: held-out GPU allocation %.2f%% -> %.2f%% (%+.3f ± %.3f seed by seed over %d seeds: %s) "+
		"after %d env steps (%.0f steps/s, %.0f s)", res.Dir, res.StartMean, res.FinalMean,
		d.Diff.Mean, d.Diff.HalfWidth, d.Diff.N, d.Verdict(), res.EnvSteps, res.StepsPerSecond, res.Seconds)}
	if res.BestUpdate > 0 {
		lines = append(lines, fmt.Sprintf("best held-out evaluation: %.2f%% at update %d, in %s",
			res.BestMean, res.BestUpdate, filepath.Join(res.Dir, BestDir)))
	}
	res.Summary = allocSummary(res, lines...)
	return map[string]float64{"start_mean_alloc_gpu_pct": res.StartMean,
		"final_mean_alloc_gpu_pct": res.FinalMean, "env_steps": float64(res.EnvSteps)}
}

func newEpisodes(cfg config.FinetuneConfig) (*episodes, error) {
	nodes, err := sim.LoadNodes(cfg.Nodes)
	if err != nil {
		return nil, err
	}
	e := &episodes{nodes: nodes, tune: cfg.Tune,
		opts: env.Options{RewardPlaced: cfg.RewardPlaced, RewardFragment: cfg.RewardFragment, Candidates: cfg.Candidates}}
	for _, name := range cfg.Traces {
		path := tracePath(cfg.TracesDir, name)
		tasks, err := sim.LoadTasks(path)
		if err != nil {
			return nil, err
		}
		model, err := sim.TypicalShapes(tasks, cfg.Coverage)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		e.traces = append(e.traces, trace{path: path, tasks: tasks, model: model})
	}
	if e.seeds, err = config.ParseSeeds(cfg.Seeds); err != nil {
		return nil, fmt.Errorf("finetune.seeds: %w", err)
	}
	for i, n := range cfg.ClusterSizes {
		if n > len(nodes) {
			return nil, fmt.Errorf("finetune.cluster_sizes[%d]: %d nodes asked, %s has %d", i, n, cfg.Nodes, len(nodes))
		}
	}
	if cfg.EvalClusterSize > len(nodes) {
		return nil, fmt.Errorf("finetune.eval_cluster_size: %d nodes asked, %s has %d", cfg.EvalClusterSize, cfg.Nodes, len(nodes))
	}
	e.sizes = cfg.ClusterSizes
	if e.evalSeeds, err = config.ParseSeeds(cfg.EvalSeeds); err != nil {
		return nil, fmt.Errorf("finetune.eval_seeds: %w", err)
	}
	e.evalSize = cfg.EvalClusterSize
	return e, nil
}

// tracePath resolves an openb short name (default, gpushare40, ...) or a CSV path.
func tracePath(dir, name string) string {
	if strings.HasSuffix(name, ".csv") || strings.ContainsRune(name, os.PathSeparator) {
		return name
	}
	return filepath.Join(dir, "openb_pod_list_"+name+".csv")
}

// draw picks the next training episode.
func (e *episodes) draw(rng *rand.Rand) Draw {
	return Draw{Trace: rng.IntN(len(e.traces)), Seed: e.seeds[rng.IntN(len(e.seeds))], Size: e.sizes[rng.IntN(len(e.sizes))]}
}

// build starts the episode d names: a seeded node subset (all nodes for size 0) and the trace's
// workload tuned to that subset's GPU capacity, which samples the trace in proportion.
func (e *episodes) build(d Draw) (*env.Arrivals, error) {
	c, work, err := e.workload(d)
	if err != nil {
		return nil, err
	}
	return env.NewArrivals(c, work, e.opts), nil
}

// workload is the empty cluster and the task sequence of episode d.
func (e *episodes) workload(d Draw) (*sim.Cluster, []sim.Task, error) {
	if d.Trace < 0 || d.Trace >= len(e.traces) {
		return nil, nil, fmt.Errorf("episode trace index %d out of range (%d traces)", d.Trace, len(e.traces))
	}
	tr := e.traces[d.Trace]
	nodes := e.nodesOf(d)
	c, err := sim.NewCluster(nodes, tr.model)
	if err != nil {
		return nil, nil, err
	}
	// The seeded tie order `schedrl sim` gives the same seed, so held-out numbers match it.
	if err := c.SetTieOrder(sim.SeededTieOrder(len(nodes), d.Seed)); err != nil {
		return nil, nil, err
	}
	_, _, capGPU := c.Capacity()
	work, err := sim.TuneWorkload(tr.tasks, capGPU, e.tune, sim.RNG(d.Seed, sim.StreamWorkload))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", tr.path, err)
	}
	return c, work, nil
}

// nodesOf is episode d's node list: a seeded subset of d.Size nodes in list order, or all.
func (e *episodes) nodesOf(d Draw) []sim.Node {
	if d.Size <= 0 || d.Size >= len(e.nodes) {
		return e.nodes
	}
	idx := sim.RNG(d.Seed, streamSubset).Perm(len(e.nodes))[:d.Size]
	slices.Sort(idx)
	nodes := make([]sim.Node, d.Size)
	for k, i := range idx {
		nodes[k] = e.nodes[i]
	}
	return nodes
}
