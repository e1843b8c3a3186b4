package stages

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
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

// placementLogs is the placement expert: the sim section's expert places the tuned workload
// of each pipeline.log_seeds seed (a unit), writing one decision log each.
type placementLogs struct {
	sim   config.SimConfig
	seeds []uint64
	k     expertKey
	args  []string
}

// expertKey is what the logs depend on: the sim section without its single seed (log_seeds
// replaces it) and the content of the trace files. Where they are made is no part of it.
type expertKey struct {
	Sim   config.SimConfig `json:"sim"`
	Seeds []uint64         `json:"seeds"`
	Files []logFile        `json:"files"`
}

func newExpertLogs(cfg config.Config) (*shardedLogs, error) {
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
	// The keys the logs depend on (sim.seed is replaced by the log seeds).
	args, err := config.SetArgs(cfg, "sim.nodes", "sim.pods", "sim.policy", "sim.tune", "sim.coverage")
	if err != nil {
		return nil, err
	}
	m := &placementLogs{sim: cfg.Sim, seeds: seeds, args: args}
	m.k = expertKey{Sim: cfg.Sim, Seeds: seeds, Files: files}
	m.k.Sim.Seed = 0
	m.k.Sim.Nodes, m.k.Sim.Pods = filepath.Base(cfg.Sim.Nodes), filepath.Base(cfg.Sim.Pods)
	return newShardedLogs(cfg, m)
}

func (m *placementLogs) key() any          { return m.k }
func (m *placementLogs) files() []logFile  { return m.k.Files }
func (m *placementLogs) podArgs() []string { return m.args }

// units are the seeds' log names without .jsonl.
func (m *placementLogs) units() []string {
	trace := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(m.sim.Pods), "openb_pod_list_"), ".csv")
	out := make([]string, len(m.seeds))
	for i, seed := range m.seeds {
		out[i] = fmt.Sprintf("%s-%s-seed%d", trace, strings.ToLower(m.sim.Policy), seed)
	}
	return out
}

func (m *placementLogs) metric(decisions int) (pipeline.Metric, error) {
	return pipeline.Metric{Name: "decisions", Value: float64(decisions)}, nil
}

// make runs the batch's seeds at once, a simulation per CPU.
func (m *placementLogs) make(ctx context.Context, units []int, dir string, log *slog.Logger) ([][]madeLog, error) {
	labels := m.units()
	jobs := make([]sim.Job, len(units))
	at := map[uint64]int{}
	for j, u := range units {
		seed := m.seeds[u]
		at[seed] = j
		jobs[j] = sim.Job{
			Experiment: sim.Experiment{NodesPath: m.sim.Nodes, PodsPath: m.sim.Pods, Tune: m.sim.Tune, Seed: seed, Coverage: m.sim.Coverage},
			LogPath:    filepath.Join(dir, labels[u]+".jsonl"),
		}
	}
	newPlacer := func() (sim.Placer, error) { return policy.NewPlacer(m.sim.Policy) }
	made := make([][]madeLog, len(units))
	var errs []error
	for _, r := range sim.RunBatch(ctx, jobs, newPlacer, len(jobs)) {
		if r.Err != nil {
			errs = append(errs, fmt.Errorf("seed %d: %w", r.Seed, r.Err))
			continue
		}
		made[at[r.Seed]] = []madeLog{{Name: filepath.Base(r.LogPath), Count: r.Result.Tasks}}
		log.Info("expert log written", "seed", r.Seed, "tasks", r.Result.Tasks, "placed", r.Result.Placed,
			"alloc_gpu_pct", r.Result.Final.GPUAllocPct, "seconds", fmt.Sprintf("%.1f", r.WallSeconds))
	}
	return made, errors.Join(errs...)
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
