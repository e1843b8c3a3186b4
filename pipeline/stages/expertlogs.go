package stages

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/family"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/pipeline"
	"github.com/schedrl/schedrl/policy"
	"github.com/schedrl/schedrl/registry"
	"github.com/schedrl/schedrl/sim"
)

// The placement family: the sim section's expert places arrival workloads, and behaviour
// cloning and PPO learn from its decisions (the episodes read no section beside finetune's);
// configs/default.yaml's pipeline publishes it as the registry model placement.
func init() {
	family.Register(family.Family{
		Name:       env.PlacementName,
		ExpertLogs: func(cfg config.Config) (pipeline.Stage, error) { return newExpertLogs(cfg) },
		Dataset:    entityDataset(nil),
	})
	registry.RegisterPipelineConfig("placement", "configs/default.yaml")
}

// expertLogs is the placement logs stage that makes "historical" scheduler logs: the sim
// section's expert places the tuned workload of each pipeline.log_seeds seed, writing one
// decision log each.
type expertLogs struct {
	sim   config.SimConfig
	seeds []uint64
	key   expertKey
}

// expertKey is what the logs depend on: the sim section without its single seed (log_seeds
// replaces it) and the content of the trace files.
type expertKey struct {
	Sim   config.SimConfig `json:"sim"`
	Seeds []uint64         `json:"seeds"`
	Files []logFile        `json:"files"`
}

func newExpertLogs(cfg config.Config) (*expertLogs, error) {
	if _, err := policy.NewPlacer(cfg.Sim.Policy); err != nil {
		return nil, fmt.Errorf("sim.policy: %w", err)
	}
	seeds, err := config.ParseSeeds(cfg.Pipeline.LogSeeds)
	if err != nil {
		return nil, fmt.Errorf("pipeline.log_seeds: %w", err)
	}
	files, err := hashFiles("sim", map[string]string{"nodes": cfg.Sim.Nodes, "pods": cfg.Sim.Pods})
	if err != nil {
		return nil, err
	}
	s := &expertLogs{sim: cfg.Sim, seeds: seeds}
	s.key = expertKey{Sim: cfg.Sim, Seeds: seeds, Files: files}
	s.key.Sim.Seed = 0
	s.key.Sim.Nodes, s.key.Sim.Pods = filepath.Base(cfg.Sim.Nodes), filepath.Base(cfg.Sim.Pods)
	return s, nil
}

func (s *expertLogs) Name() string     { return "logs" }
func (s *expertLogs) Inputs() []string { return nil }
func (s *expertLogs) Config() any      { return s.key }

func (s *expertLogs) Run(ctx context.Context, env pipeline.Env) (pipeline.Result, error) {
	trace := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(s.sim.Pods), "openb_pod_list_"), ".csv")
	var jobs []sim.Job
	for _, seed := range s.seeds {
		jobs = append(jobs, sim.Job{
			Experiment: sim.Experiment{NodesPath: s.sim.Nodes, PodsPath: s.sim.Pods, Tune: s.sim.Tune, Seed: seed, Coverage: s.sim.Coverage},
			LogPath:    filepath.Join(env.OutDir, fmt.Sprintf("%s-%s-seed%d.jsonl", trace, strings.ToLower(s.sim.Policy), seed)),
		})
	}
	newPlacer := func() (sim.Placer, error) { return policy.NewPlacer(s.sim.Policy) }
	// Batches of one job per CPU, so progress moves and a cancel stops between batches.
	workers := runtime.GOMAXPROCS(0)
	env.Progress.Start(int64(len(jobs)), "runs")
	decisions := 0
	for lo := 0; lo < len(jobs); lo += workers {
		if err := ctx.Err(); err != nil {
			return pipeline.Result{}, err
		}
		hi := min(lo+workers, len(jobs))
		var errs []error
		for _, r := range sim.RunBatch(ctx, jobs[lo:hi], newPlacer, workers) {
			if r.Err != nil {
				errs = append(errs, fmt.Errorf("seed %d: %w", r.Seed, r.Err))
				continue
			}
			decisions += r.Result.Tasks
			env.Log.Info("expert log written", "seed", r.Seed, "tasks", r.Result.Tasks, "placed", r.Result.Placed,
				"alloc_gpu_pct", r.Result.Final.GPUAllocPct, "seconds", fmt.Sprintf("%.1f", r.WallSeconds))
		}
		if err := errors.Join(errs...); err != nil {
			return pipeline.Result{}, err
		}
		env.Progress.Add(int64(hi - lo))
	}
	return pipeline.Result{Metric: &pipeline.Metric{Name: "decisions", Value: float64(decisions)}}, nil
}

// hashFiles returns the content hash of each named input file, for keys: a trace edited in
// place must invalidate what was built from it. Errors name the config key.
func hashFiles(section string, files map[string]string) ([]logFile, error) {
	var out []logFile
	for _, k := range sortedKeys(files) {
		sum, err := pipeline.HashFile(files[k])
		if err != nil {
			return nil, fmt.Errorf("%s.%s: %w", section, k, err)
		}
		out = append(out, logFile{Name: k + ":" + filepath.Base(files[k]), SHA256: sum})
	}
	return out, nil
}
