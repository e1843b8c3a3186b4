package stages

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/eval"
	"github.com/schedrl/schedrl/executor"
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
// decision log each. The seeds are dealt to shards that pipeline.executor runs: in this
// process, or as the pods of an Indexed Job (`schedrl logs expert --shard I/N`), whose logs
// come back through the store by sha256.
type expertLogs struct {
	sim   config.SimConfig
	seeds []uint64
	key   expertKey
	exec  config.ExecutorConfig
	store config.RegistryConfig
}

// expertKey is what the logs depend on: the sim section without its single seed (log_seeds
// replaces it) and the content of the trace files. Where they are made is no part of it.
type expertKey struct {
	Sim   config.SimConfig `json:"sim"`
	Seeds []uint64         `json:"seeds"`
	Files []logFile        `json:"files"`
}

// ExpertLogsPartSchema names the layout of an expert-logs shard's part.
const ExpertLogsPartSchema = "schedrl.logs.expert-part/v1"

// expertPart is one shard's decision logs: each named by its sha256, and, from a pod, by the
// store key of its bytes. Files are the trace files the shard read, so a pod whose image holds
// other traces than this machine is refused at the merge.
type expertPart struct {
	Schema string      `json:"schema"`
	Shard  int         `json:"shard"`
	Shards int         `json:"shards"`
	Files  []logFile   `json:"files"`
	Logs   []expertLog `json:"logs"`
}

type expertLog struct {
	Seed   uint64 `json:"seed"`
	Name   string `json:"name"`
	SHA256 string `json:"sha256"`
	Key    string `json:"key,omitempty"` // the store key of its bytes; empty: already in the output
	Tasks  int    `json:"tasks"`
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
	s := &expertLogs{sim: cfg.Sim, seeds: seeds, exec: cfg.Pipeline.Executor, store: cfg.Registry}
	s.key = expertKey{Sim: cfg.Sim, Seeds: seeds, Files: files}
	s.key.Sim.Seed = 0
	s.key.Sim.Nodes, s.key.Sim.Pods = filepath.Base(cfg.Sim.Nodes), filepath.Base(cfg.Sim.Pods)
	return s, nil
}

func (s *expertLogs) Name() string     { return "logs" }
func (s *expertLogs) Inputs() []string { return nil }
func (s *expertLogs) Config() any      { return s.key }

// logName is seed's decision log's file name.
func (s *expertLogs) logName(seed uint64) string {
	trace := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(s.sim.Pods), "openb_pod_list_"), ".csv")
	return fmt.Sprintf("%s-%s-seed%d.jsonl", trace, strings.ToLower(s.sim.Policy), seed)
}

func (s *expertLogs) Run(ctx context.Context, env pipeline.Env) (pipeline.Result, error) {
	x, err := executor.New(s.exec, s.store, env.Log)
	if err != nil {
		return pipeline.Result{}, err
	}
	// Locally one shard: its runs already fill every core.
	shards := 1
	w := executor.Work{Name: "logs", Args: s.shardArgs(),
		Local: func(ctx context.Context, i int) ([]byte, error) {
			p, err := s.runShard(ctx, eval.Shard{Index: i, Count: shards}, env.OutDir, env.Log, env.Progress)
			if err != nil {
				return nil, err
			}
			return json.Marshal(p)
		}}
	if s.exec.Kind == "kubernetes" {
		shards = s.exec.ShardCount(len(s.seeds))
		env.Progress.Start(int64(shards), "shards")
		last := 0
		w.Progress = func(done, _ int) { env.Progress.Add(int64(done - last)); last = done }
	} else {
		env.Progress.Start(int64(len(s.seeds)), "runs")
	}
	w.Shards = shards
	parts, err := x.Run(ctx, w)
	if err != nil {
		return pipeline.Result{}, err
	}
	decisions, err := s.merge(ctx, parts, env.OutDir, env.Log)
	if err != nil {
		return pipeline.Result{}, err
	}
	return pipeline.Result{Metric: &pipeline.Metric{Name: "decisions", Value: float64(decisions)}}, nil
}

// shardArgs is the pod's command: the keys the logs depend on (a default path stays unsaid,
// so the pod finds data/ in its own image).
func (s *expertLogs) shardArgs() []string {
	def := config.Default().Sim
	args := []string{"logs", "expert", "--set", "pipeline.log_seeds=" + seedList(s.seeds)}
	set := func(key, v, d string) {
		if v != d && v != config.RepoFile(d) {
			args = append(args, "--set", key+"="+v)
		}
	}
	num := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	set("sim.nodes", s.sim.Nodes, def.Nodes)
	set("sim.pods", s.sim.Pods, def.Pods)
	set("sim.policy", s.sim.Policy, def.Policy)
	set("sim.tune", num(s.sim.Tune), num(def.Tune))
	set("sim.coverage", num(s.sim.Coverage), num(def.Coverage))
	return args
}

func seedList(seeds []uint64) string {
	out := make([]string, len(seeds))
	for i, s := range seeds {
		out[i] = strconv.FormatUint(s, 10)
	}
	return strings.Join(out, ",")
}

// runShard writes the decision logs of shard sh's seeds (those whose position modulo the
// shard count is its index) into dir.
func (s *expertLogs) runShard(ctx context.Context, sh eval.Shard, dir string, log *slog.Logger, progress pipeline.Progress) (expertPart, error) {
	p := expertPart{Schema: ExpertLogsPartSchema, Shard: sh.Index, Shards: sh.Count, Files: s.key.Files}
	var jobs []sim.Job
	for i := sh.Index; i < len(s.seeds); i += sh.Count {
		seed := s.seeds[i]
		jobs = append(jobs, sim.Job{
			Experiment: sim.Experiment{NodesPath: s.sim.Nodes, PodsPath: s.sim.Pods, Tune: s.sim.Tune, Seed: seed, Coverage: s.sim.Coverage},
			LogPath:    filepath.Join(dir, s.logName(seed)),
		})
	}
	newPlacer := func() (sim.Placer, error) { return policy.NewPlacer(s.sim.Policy) }
	// Batches of one job per CPU, so progress moves and a cancel stops between batches.
	workers := runtime.GOMAXPROCS(0)
	for lo := 0; lo < len(jobs); lo += workers {
		if err := ctx.Err(); err != nil {
			return p, err
		}
		hi := min(lo+workers, len(jobs))
		var errs []error
		for _, r := range sim.RunBatch(ctx, jobs[lo:hi], newPlacer, workers) {
			if r.Err != nil {
				errs = append(errs, fmt.Errorf("seed %d: %w", r.Seed, r.Err))
				continue
			}
			sum, err := pipeline.HashFile(r.LogPath)
			if err != nil {
				errs = append(errs, fmt.Errorf("seed %d: %w", r.Seed, err))
				continue
			}
			p.Logs = append(p.Logs, expertLog{Seed: r.Seed, Name: filepath.Base(r.LogPath), SHA256: sum, Tasks: r.Result.Tasks})
			log.Info("expert log written", "seed", r.Seed, "tasks", r.Result.Tasks, "placed", r.Result.Placed,
				"alloc_gpu_pct", r.Result.Final.GPUAllocPct, "seconds", fmt.Sprintf("%.1f", r.WallSeconds))
		}
		if err := errors.Join(errs...); err != nil {
			return p, err
		}
		if progress != nil {
			progress.Add(int64(hi - lo))
		}
	}
	return p, nil
}

// ExpertLogsShard is a pod's side of the logs stage: it makes shard sh of cfg's expert logs
// in a temporary folder, stores each log under prefix by its sha256 and returns the part.
func ExpertLogsShard(ctx context.Context, cfg config.Config, sh eval.Shard, prefix string, log *slog.Logger) ([]byte, error) {
	s, err := newExpertLogs(cfg)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "schedrl-logs-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	p, err := s.runShard(ctx, sh, dir, log, nil)
	if err != nil {
		return nil, err
	}
	for i, l := range p.Logs {
		key, sum, err := executor.PutBlob(ctx, cfg.Registry, prefix, filepath.Join(dir, l.Name))
		if err != nil {
			return nil, fmt.Errorf("seed %d: %w", l.Seed, err)
		}
		if sum != l.SHA256 {
			return nil, fmt.Errorf("seed %d: %s changed while it was stored", l.Seed, l.Name)
		}
		p.Logs[i].Key = key
	}
	return json.Marshal(p)
}

// merge checks that the parts hold every seed's log once, each from its own shard and the
// same trace files, fetches those stored elsewhere into dir and checks every log's sha256.
// It returns the decisions of all logs.
func (s *expertLogs) merge(ctx context.Context, parts [][]byte, dir string, log *slog.Logger) (int, error) {
	shardOf := map[uint64]int{}
	for i, seed := range s.seeds {
		shardOf[seed] = i % len(parts)
	}
	seen := map[uint64]bool{}
	var fetched []string
	decisions := 0
	for n, data := range parts {
		var p expertPart
		if err := decodeStrict(data, &p); err != nil {
			return 0, fmt.Errorf("logs part of shard %d/%d: %w", n, len(parts), err)
		}
		switch {
		case p.Schema != ExpertLogsPartSchema:
			return 0, fmt.Errorf("logs part of shard %d/%d: schema %q, want %q", n, len(parts), p.Schema, ExpertLogsPartSchema)
		case p.Shard != n || p.Shards != len(parts):
			return 0, fmt.Errorf("logs part of shard %d/%d: made for shard %d/%d", n, len(parts), p.Shard, p.Shards)
		case !slices.Equal(p.Files, s.key.Files):
			return 0, fmt.Errorf("logs part of shard %d/%d: made from trace files %v, this config's are %v (an image of another commit?)",
				n, len(parts), p.Files, s.key.Files)
		}
		for _, l := range p.Logs {
			if sh, ok := shardOf[l.Seed]; !ok || sh != n || seen[l.Seed] || l.Name != s.logName(l.Seed) {
				return 0, fmt.Errorf("logs part of shard %d/%d: seed %d (%s) is not its own or comes twice", n, len(parts), l.Seed, l.Name)
			}
			seen[l.Seed] = true
			path := filepath.Join(dir, l.Name)
			if l.Key != "" {
				if err := executor.FetchBlob(ctx, s.store, l.Key, l.SHA256, path); err != nil {
					return 0, fmt.Errorf("seed %d: %w", l.Seed, err)
				}
				fetched = append(fetched, l.Key)
			}
			if sum, err := pipeline.HashFile(path); err != nil || sum != l.SHA256 {
				return 0, fmt.Errorf("seed %d: %s is not the log its shard made (sha256 %s, want %s, %v)", l.Seed, path, sum, l.SHA256, err)
			}
			decisions += l.Tasks
		}
	}
	for _, seed := range s.seeds {
		if !seen[seed] {
			return 0, fmt.Errorf("logs parts: seed %d (shard %d/%d) is missing", seed, shardOf[seed], len(parts))
		}
	}
	if err := executor.DeleteBlobs(ctx, s.store, fetched); err != nil {
		log.Warn("stored logs not deleted", "err", err)
	}
	return decisions, nil
}

// decodeStrict reads JSON refusing unknown fields: a part of another layout is not half read.
func decodeStrict(data []byte, into any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(into)
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
