package stages

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/schedrl/schedrl/datasets"
	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/family"
	"github.com/schedrl/schedrl/fungible"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/jobs"
	"github.com/schedrl/schedrl/pipeline"
	"github.com/schedrl/schedrl/registry"
)

// The maifs family: the expert's fungible decision logs, rebuilt as multi-agent decision
// points on the maifs section's tables (which cloning reads too); its episodes read the maifs
// section; configs/maifs.yaml's pipeline publishes it as the registry model maifs.
func init() {
	family.Register(family.Family{
		Name:       env.MAIFSName,
		ExpertLogs: func(cfg config.Config) (pipeline.Stage, error) { return newMAIFSLogs(cfg) },
		Dataset:    &family.Dataset{Key: maifsDatasetKey, Build: buildMAIFSDataset},
		PretrainFiles: func(c config.Config) map[string]string {
			m := c.MAIFS
			return map[string]string{"maifs throughputs": m.Throughputs, "maifs profiles": m.Profiles, "maifs mapping": m.Mapping}
		},
		Sections: func(c config.Config) any { return c.MAIFS },
	})
	registry.RegisterPipelineConfig("maifs", "configs/maifs.yaml")
}

// maifsDatasetKey is what a maifs dataset reads of the maifs section: the environment, the
// validation seeds and every (the tables' content is in the logs' headers, checked by the
// build).
func maifsDatasetKey(cfg config.Config) (any, error) {
	if err := cfg.MAIFS.Validate(); err != nil {
		return nil, fmt.Errorf("maifs.%w", err)
	}
	o, err := datasets.MAIFSBuildOf(cfg.MAIFS, "", "", false)
	if err != nil {
		return nil, err
	}
	o.Throughputs, o.Profiles, o.Mapping = "", "", ""
	return &o, nil
}

// buildMAIFSDataset rebuilds the fungible world's logs as multi-agent decision points:
// validation is the logs of maifs.val_seeds, every maifs.every-th round is kept.
func buildMAIFSDataset(_ context.Context, cfg config.Config, log *slog.Logger) (pipeline.Result, error) {
	if err := cfg.MAIFS.Validate(); err != nil {
		return pipeline.Result{}, fmt.Errorf("maifs.%w", err)
	}
	c := cfg.Datasets
	o, err := datasets.MAIFSBuildOf(cfg.MAIFS, c.Logs, c.Out, c.Force)
	if err != nil {
		return pipeline.Result{}, err
	}
	m, stats, err := datasets.BuildMAIFS(o)
	if err != nil {
		return pipeline.Result{}, err
	}
	log.Info("dataset built", "out", c.Out, "env", env.MAIFSName, "logs", stats.Logs, "decision_points", stats.Points, "rows", stats.Rows,
		"train_points", m.Splits[datasets.SplitTrain].Points, "val_points", m.Splits[datasets.SplitVal].Points)
	return pipeline.Result{Metric: &pipeline.Metric{Name: "decision_points", Value: float64(stats.Points)}}, nil
}

// maifsLogs is the maifs expert: maifs.expert in maifs.order runs every maifs.generate
// workload at every maifs.seeds and maifs.val_seeds seed (a unit) in the fungible world
// (maifs.cluster in servers of maifs.servers_gpus GPUs), and each run is a decision log of
// whole allocations (fungible.WriteLogFile, as `schedrl jobs --servers-gpus N --log` writes
// it), the input of `datasets build --env maifs`.
type maifsLogs struct {
	sec   config.MAIFSConfig
	round float64
	seeds []uint64
	k     maifsLogsKey
	args  []string
	world *fungible.World // loaded at the first make
	read  []fungible.LogFile
}

// maifsLogsKey is what the logs depend on: the world, expert, workloads and seeds, the round
// length and the tables' content (the PPO and held-out keys are not read here).
type maifsLogsKey struct {
	MAIFS config.MAIFSConfig `json:"maifs"`
	Round float64            `json:"round_s"`
	Files []logFile          `json:"files"`
}

func newMAIFSLogs(cfg config.Config) (*shardedLogs, error) {
	sec := cfg.MAIFS
	if err := sec.Validate(); err != nil {
		return nil, fmt.Errorf("maifs.%w", err)
	}
	if err := checkMAIFSPipeline(cfg); err != nil {
		return nil, err
	}
	if _, err := fungible.LookupRule(sec.Expert); err != nil {
		return nil, fmt.Errorf("maifs.expert: %w", err)
	}
	if _, err := jobs.NewPolicy(sec.Order); err != nil {
		return nil, fmt.Errorf("maifs.order: %w", err)
	}
	for i, g := range sec.Generate {
		if _, err := fungible.ParseWorkloadSpec(g); err != nil {
			return nil, fmt.Errorf("maifs.generate[%d]: %w", i, err)
		}
	}
	seeds, _ := config.ParseSeeds(sec.Seeds) // Validate parsed both
	val, _ := config.ParseSeeds(sec.ValSeeds)
	s := &maifsLogs{sec: sec, round: cfg.Eval.Timed.Round, seeds: append(seeds, val...)}
	hashes, err := hashFiles("maifs", s.tables())
	if err != nil {
		return nil, err
	}
	s.k = maifsLogsKey{MAIFS: sec, Round: s.round, Files: hashes}
	s.k.MAIFS.PPOGenerate, s.k.MAIFS.PPOSeeds, s.k.MAIFS.HeldOut = nil, "", ""
	// checkMAIFSPipeline reads the eval and datasets keys too.
	if s.args, err = config.SetArgs(cfg, "maifs", "eval.timed", "eval.seeds", "datasets.env"); err != nil {
		return nil, err
	}
	return newShardedLogs(cfg, s)
}

func (s *maifsLogs) tables() map[string]string {
	return map[string]string{"throughputs": s.sec.Throughputs, "profiles": s.sec.Profiles, "mapping": s.sec.Mapping}
}

// checkMAIFSPipeline refuses, before any stage runs, a maifs pipeline whose stages would not
// fit together: the dataset must be built for maifs, the evaluation must run the fungible world
// the policy was trained in, and no training or validation seed may be an evaluation seed.
func checkMAIFSPipeline(cfg config.Config) error {
	sec, t := cfg.MAIFS, cfg.Eval.Timed
	switch {
	case cfg.Datasets.Env != env.MAIFSName:
		return fmt.Errorf("datasets.env: %q, and the maifs logs stage writes the fungible world's logs: set datasets.env: maifs", cfg.Datasets.Env)
	case t.Kind != "fungible":
		return fmt.Errorf("eval.timed.kind: %q, and a maifs policy runs in the fungible world: set eval.timed.kind: fungible", t.Kind)
	case strings.TrimSpace(t.Cluster) != sec.Cluster:
		return fmt.Errorf("eval.timed.cluster: %q, the policy is trained on maifs.cluster %q", t.Cluster, sec.Cluster)
	case cmp.Or(strings.TrimSpace(t.ServersGPUs), fmt.Sprint(fungible.ServerGPUs)) != fmt.Sprint(sec.ServerGPUs):
		return fmt.Errorf("eval.timed.servers_gpus: %q, the policy is trained on servers of maifs.servers_gpus %d GPUs", t.ServersGPUs, sec.ServerGPUs)
	}
	evalSeeds, err := config.ParseSeeds(cfg.Eval.Seeds)
	if err != nil {
		return fmt.Errorf("eval.seeds: %w", err)
	}
	for _, k := range []struct{ key, seeds string }{{"maifs.seeds", sec.Seeds}, {"maifs.val_seeds", sec.ValSeeds}, {"maifs.ppo_seeds", sec.PPOSeeds}} {
		seeds, _ := config.ParseSeeds(k.seeds)
		for _, s := range evalSeeds {
			if slices.Contains(seeds, s) {
				return fmt.Errorf("eval.seeds: %d is also in %s: evaluate on held-out seeds (maifs.held_out_seeds %s)", s, k.key, sec.HeldOut)
			}
		}
	}
	return nil
}

func (s *maifsLogs) key() any          { return s.k }
func (s *maifsLogs) files() []logFile  { return s.k.Files }
func (s *maifsLogs) podArgs() []string { return s.args }

func (s *maifsLogs) metric(rounds int) (pipeline.Metric, error) {
	return pipeline.Metric{Name: "rounds", Value: float64(rounds)}, nil
}

// unit i is the run of workload i / seeds at seed i mod seeds.
func (s *maifsLogs) unit(i int) (spec string, seed uint64) {
	return s.sec.Generate[i/len(s.seeds)], s.seeds[i%len(s.seeds)]
}

// units are numbered in run order: the datasets stage reads logs in name order, so it sees
// them in the config's order, as maifs-bc records them, and the same seed clones the same
// network both ways (by spec name, lam=1500 would come before lam=900).
func (s *maifsLogs) units() []string {
	out := make([]string, len(s.sec.Generate)*len(s.seeds))
	for i := range out {
		spec, seed := s.unit(i)
		out[i] = fmt.Sprintf("%03d-%s-seed%d", i, fileSafe(spec), seed)
	}
	return out
}

// make runs the units one after the other, each with an order policy of its own, so a run
// does not depend on the runs before it in its shard.
func (s *maifsLogs) make(ctx context.Context, units []int, dir string, log *slog.Logger) ([][]madeLog, error) {
	if s.world == nil {
		w, err := fungible.LoadWorld(datasets.MAIFSWorld(s.sec), "maifs.")
		if err != nil {
			return nil, err
		}
		s.world = &w
		// The logs name each table by its file name: a pod's image keeps the tables at another
		// path, and the sha256 says which table it is.
		tables := s.tables()
		for _, name := range slices.Sorted(maps.Keys(tables)) {
			sum, err := pipeline.HashFile(tables[name])
			if err != nil {
				return nil, fmt.Errorf("maifs.%s: %w", name, err)
			}
			s.read = append(s.read, fungible.LogFile{Name: name, Path: filepath.Base(tables[name]), SHA256: sum})
		}
	}
	cluster, m := s.world.Cluster, s.world.Model
	rule, _ := fungible.LookupRule(s.sec.Expert) // checked when the stage was built
	labels := s.units()
	made := make([][]madeLog, len(units))
	for j, u := range units {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		spec, seed := s.unit(u)
		wc, _ := fungible.ParseWorkloadSpec(spec) // checked when the stage was built
		wc.Seed = seed
		work, err := fungible.Generate(m.Tput, m.Sens.JobTypes(), wc)
		if err != nil {
			return nil, fmt.Errorf("maifs.generate %s seed %d: %w", spec, seed, err)
		}
		order, _ := jobs.NewPolicy(s.sec.Order)
		rc := fungible.RunConfig{Rule: rule, Order: order, Round: s.round}
		rec := fungible.Record(&rc)
		res, err := fungible.Run(cluster, m, work, rc)
		if err != nil {
			return nil, fmt.Errorf("maifs.generate %s seed %d: %w", spec, seed, err)
		}
		h := fungible.LogHeader{Cluster: s.sec.Cluster, ServerGPUs: s.sec.ServerGPUs, Servers: fungible.LogServers(cluster), RoundS: s.round,
			Rule: s.sec.Expert, Order: s.sec.Order, Workload: spec, Seed: seed, Jobs: fungible.LogJobs(work), Files: s.read}
		name := labels[u] + ".jsonl"
		if err := fungible.WriteLogFile(filepath.Join(dir, name), h, nil, rec.Rounds, res); err != nil {
			return nil, err
		}
		made[j] = []madeLog{{Name: name, Count: res.Rounds}}
		log.Info("expert log written", "log", name, "rounds", res.Rounds, "avg_jct_s", int(res.AvgJCT))
	}
	return made, nil
}

// fileSafe is a workload spec as a file name ("jobs=300,lam=900,multigpu" -> "jobs-300_lam-900_multigpu").
func fileSafe(spec string) string {
	return strings.NewReplacer("=", "-", ",", "_", "/", "_").Replace(spec)
}
