package stages

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/schedrl/schedrl/defrag/online"
	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/eval"
	"github.com/schedrl/schedrl/family"
	"github.com/schedrl/schedrl/internal/atomicfile"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/pipeline"
	"github.com/schedrl/schedrl/registry"
	"github.com/schedrl/schedrl/sim"
	"github.com/schedrl/schedrl/tasks"
)

// The drr family (docs/drr.md): the sim section's expert (FGD) places every start of the
// openb timed world's timelines on seeded sub-clusters, and its decisions are version-2 timed
// logs, cloned as a placement dataset (datasets.env: placement); PPO's episodes read the
// defrag_online section's timelines, and it is also an eval.timed.kind, judged on the
// time-averaged fragmentation rate of the same timelines on held-out seeds.
func init() {
	family.Register(family.Family{
		Name:       online.DRREnvName,
		ExpertLogs: func(cfg config.Config) (pipeline.Stage, error) { return newDRRLogs(cfg) },
		Sections:   func(c config.Config) any { return c.DefragOnline },
		EvalSection: func(c config.Config) (any, error) {
			if err := eval.CheckDRR(c.Eval, &c.DefragOnline); err != nil {
				return nil, fmt.Errorf("eval config: %w", err)
			}
			if err := checkDRRPipeline(c); err != nil {
				return nil, err
			}
			return c.DefragOnline, nil
		},
	})
	registry.RegisterPipelineConfig("drr", "configs/drr.yaml")
}

// drrLogs is the drr logs stage: sim.policy places the timeline of every finetune.traces pod
// list x defrag_online.loads x pipeline.log_seeds seed on each finetune.cluster_sizes
// sub-cluster of finetune.nodes (online.SubCluster, drawn by the seed), and each run is a
// version-2 timed decision log (as `schedrl jobs openb --log` writes it), whose starts
// `datasets build --env placement` reads as decisions.
type drrLogs struct {
	sec    config.DefragOnlineConfig
	expert string
	nodes  string
	sizes  []int
	traces []eval.TraceRef
	seeds  []uint64
	key    drrLogsKey
}

// drrLogsKey is what the logs depend on: the timelines, the expert, the seeds and cluster
// sizes and the content of the node and pod lists.
type drrLogsKey struct {
	Duration float64   `json:"duration_s"`
	Warmup   float64   `json:"warmup_s"`
	Cap      float64   `json:"cap_s"`
	Loads    []float64 `json:"loads"`
	Expert   string    `json:"expert"`
	Sizes    []int     `json:"cluster_sizes"`
	Seeds    []uint64  `json:"seeds"`
	Files    []logFile `json:"files"`
}

func newDRRLogs(cfg config.Config) (*drrLogs, error) {
	sec := cfg.DefragOnline
	if err := sec.Validate(); err != nil {
		return nil, fmt.Errorf("defrag_online.%w", err)
	}
	if err := checkDRRPipeline(cfg); err != nil {
		return nil, err
	}
	if err := localOnly(cfg, "the drr expert logs"); err != nil {
		return nil, err
	}
	if _, err := tasks.NewPlacer(cfg.Sim.Policy); err != nil {
		return nil, fmt.Errorf("sim.policy: %w", err)
	}
	seeds, err := config.ParseSeeds(cfg.Pipeline.LogSeeds)
	if err != nil {
		return nil, fmt.Errorf("pipeline.log_seeds: %w", err)
	}
	s := &drrLogs{sec: sec, expert: cfg.Sim.Policy, nodes: cfg.Finetune.Nodes, sizes: cfg.Finetune.ClusterSizes, seeds: seeds}
	files := map[string]string{"nodes": cfg.Finetune.Nodes}
	for _, t := range cfg.Finetune.Traces {
		ref, err := eval.ParseTraceRef(t, cfg.Finetune.TracesDir)
		if err != nil {
			return nil, fmt.Errorf("finetune.traces: %w", err)
		}
		s.traces = append(s.traces, ref)
		files["trace "+ref.Name] = ref.Path
	}
	hashes, err := hashFiles("finetune", files)
	if err != nil {
		return nil, err
	}
	s.key = drrLogsKey{Duration: sec.Duration, Warmup: sec.Warmup, Cap: sec.Cap, Loads: sec.Loads, Expert: s.expert,
		Sizes: s.sizes, Seeds: seeds, Files: hashes}
	return s, nil
}

// checkDRRPipeline refuses, before any stage runs, a drr pipeline whose stages would not fit
// together: the dataset is placement's rows of the timed logs, the evaluation runs DRR's
// world, and every evaluation seed is a held-out timeline (defrag_online.held_out_seeds, which
// training refuses) that no log was made on.
func checkDRRPipeline(cfg config.Config) error {
	switch {
	case cfg.Datasets.Env != env.PlacementName:
		return fmt.Errorf("datasets.env: %q, and the drr logs are placement decisions: set datasets.env: %s", cfg.Datasets.Env, env.PlacementName)
	case cfg.Eval.Timed.Kind != online.DRREnvName:
		return fmt.Errorf("eval.timed.kind: %q, and a drr policy is judged in its own world: set eval.timed.kind: %s", cfg.Eval.Timed.Kind, online.DRREnvName)
	}
	evalSeeds, err := config.ParseSeeds(cfg.Eval.Seeds)
	if err != nil {
		return fmt.Errorf("eval.seeds: %w", err)
	}
	held, err := config.ParseSeeds(cfg.DefragOnline.HeldOut)
	if err != nil {
		return fmt.Errorf("defrag_online.held_out_seeds: %w", err)
	}
	logSeeds, err := config.ParseSeeds(cfg.Pipeline.LogSeeds)
	if err != nil {
		return fmt.Errorf("pipeline.log_seeds: %w", err)
	}
	for _, s := range evalSeeds {
		if !slices.Contains(held, s) {
			return fmt.Errorf("eval.seeds: %d is not a held-out timeline (defrag_online.held_out_seeds %s)", s, cfg.DefragOnline.HeldOut)
		}
	}
	for _, s := range logSeeds {
		if slices.Contains(held, s) {
			return fmt.Errorf("pipeline.log_seeds: %d is a held-out timeline (defrag_online.held_out_seeds %s)", s, cfg.DefragOnline.HeldOut)
		}
	}
	return nil
}

func (s *drrLogs) Name() string     { return "logs" }
func (s *drrLogs) Inputs() []string { return nil }
func (s *drrLogs) Config() any      { return s.key }

func (s *drrLogs) Run(ctx context.Context, e pipeline.Env) (pipeline.Result, error) {
	nodes, err := sim.LoadNodes(s.nodes)
	if err != nil {
		return pipeline.Result{}, fmt.Errorf("finetune.nodes %q: %w", s.nodes, err)
	}
	e.Progress.Start(int64(len(s.traces)*len(s.sec.Loads)*len(s.seeds)*len(s.sizes)), "timelines")
	starts := 0
	for _, ref := range s.traces {
		trace, err := sim.LoadTasks(ref.Path)
		if err != nil {
			return pipeline.Result{}, fmt.Errorf("finetune.traces %s: %w", ref.Name, err)
		}
		model, err := sim.TypicalShapes(trace, 0.95) // the typical shapes `schedrl jobs openb` measures with
		if err != nil {
			return pipeline.Result{}, fmt.Errorf("finetune.traces %s: %w", ref.Name, err)
		}
		for _, size := range s.sizes {
			for _, load := range s.sec.Loads {
				for _, seed := range s.seeds {
					if err := ctx.Err(); err != nil {
						return pipeline.Result{}, err
					}
					tl := online.TimelineOf(s.sec, online.SubCluster(nodes, size, seed), trace, model, load, seed)
					tl.Placer = s.expert
					name := fmt.Sprintf("%s-nodes%d-load%s-seed%d.jsonl", ref.Name, len(tl.Nodes), strconv.FormatFloat(load, 'g', -1, 64), seed)
					n, err := writeDRRLog(tl, ref.Path, filepath.Join(e.OutDir, name))
					if err != nil {
						return pipeline.Result{}, fmt.Errorf("%s: %w", name, err)
					}
					starts += n
					e.Log.Info("expert log written", "log", name, "starts", n)
					e.Progress.Add(1)
				}
			}
		}
	}
	return pipeline.Result{Metric: &pipeline.Metric{Name: "starts", Value: float64(starts)}}, nil
}

// writeDRRLog runs tl with its placer, logging every decision to path (under a temporary
// name), and returns the number of tasks started (all run to the end: rejected ones fit no node).
func writeDRRLog(tl online.Timeline, pods, path string) (int, error) {
	w, err := tl.Build()
	if err != nil {
		return 0, err
	}
	f, err := atomicfile.Create(path, 0o644)
	if err != nil {
		return 0, err
	}
	defer f.Abort()
	h := sim.NewLogHeader(w.Cluster, map[string]string{"protocol": "openb-timed", "policy": w.Placer.Name(), "queue": tl.Queue,
		"seed": strconv.FormatUint(tl.Seed, 10), "nodes": fmt.Sprintf("%d-node sub-cluster", len(tl.Nodes)), "pods": pods,
		"load": strconv.FormatFloat(tl.Load, 'g', -1, 64), "cap_s": strconv.FormatFloat(tl.Cap, 'g', -1, 64),
		"tasks": strconv.Itoa(len(w.Workload.Arrivals))})
	h.Version = sim.LogVersionTimed
	lw, err := sim.NewLogWriter(f, h)
	if err != nil {
		return 0, err
	}
	res, err := tasks.Run(w.Cluster, w.Placer, w.Queue, w.Workload.Arrivals, tasks.Config{Warmup: tl.Warmup, Seed: tl.Seed}, lw)
	if err != nil {
		return 0, err
	}
	if err := lw.Flush(); err != nil {
		return 0, err
	}
	return len(res.Arrivals) - res.Rejected, f.Commit()
}
