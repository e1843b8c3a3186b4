package stages

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/schedrl/schedrl/eval"
	"github.com/schedrl/schedrl/executor"
	"github.com/schedrl/schedrl/family"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/pipeline"
)

// logMaker is a family's expert as the logs stage runs it: its logs are made in units (a seed,
// a timeline, a run) that are dealt to shards round-robin, and a unit's logs depend on that
// unit alone, so the shards of any count merge into the logs one process writes.
type logMaker interface {
	// key is what the logs depend on (the stage's Config); where they are made is no part of it.
	key() any
	// units labels every unit; unit i's logs are named <label>.jsonl or <label>-*.jsonl.
	units() []string
	// files are the input files' content hashes: a pod whose image holds others is refused.
	files() []logFile
	// make writes the logs of the given units (a batch of up to one per CPU) into dir.
	make(ctx context.Context, units []int, dir string, log *slog.Logger) ([][]madeLog, error)
	// podArgs are the --set flags a pod needs to build the same maker.
	podArgs() []string
	// metric sums the logs' counts into the stage's metric, refusing logs to learn nothing from.
	metric(count int) (pipeline.Metric, error)
}

// madeLog is one log a unit wrote and what it counts (decisions, rounds, invocations).
type madeLog struct {
	Name  string
	Count int
}

// shardedLogs is the logs stage of a family whose expert writes its own logs: the units are
// dealt to shards that pipeline.executor runs: in this process, or as the pods of an Indexed
// Job (`schedrl logs expert --shard I/N`), whose logs come back through the store by sha256.
type shardedLogs struct {
	m     logMaker
	args  []string
	exec  config.ExecutorConfig
	store config.RegistryConfig
}

func newShardedLogs(cfg config.Config, m logMaker) (*shardedLogs, error) {
	// finetune.env picks the family on the pod; pipeline.log_seeds are the units of most.
	own, err := config.SetArgs(cfg, "finetune.env", "pipeline.log_seeds")
	if err != nil {
		return nil, err
	}
	args := append([]string{"logs", "expert"}, own...)
	return &shardedLogs{m: m, args: append(args, m.podArgs()...), exec: cfg.Pipeline.Executor, store: cfg.Registry}, nil
}

func (s *shardedLogs) Name() string     { return "logs" }
func (s *shardedLogs) Inputs() []string { return nil }
func (s *shardedLogs) Config() any      { return s.m.key() }

// ExpertLogsPartSchema names the layout of an expert-logs shard's part.
const ExpertLogsPartSchema = "schedrl.logs.expert-part/v2"

// expertPart is one shard's logs, unit by unit: each named by its sha256, and, from a pod, by
// the store key of its bytes. Files are the input files the shard read.
type expertPart struct {
	Schema string     `json:"schema"`
	Shard  int        `json:"shard"`
	Shards int        `json:"shards"`
	Files  []logFile  `json:"files"`
	Units  []unitLogs `json:"units"`
}

type unitLogs struct {
	Unit string      `json:"unit"`
	Logs []expertLog `json:"logs"`
}

type expertLog struct {
	Name   string `json:"name"`
	SHA256 string `json:"sha256"`
	Key    string `json:"key,omitempty"` // the store key of its bytes; empty: already in the output
	Count  int    `json:"count"`
}

func (s *shardedLogs) Run(ctx context.Context, env pipeline.Env) (pipeline.Result, error) {
	x, err := executor.New(s.exec, s.store, env.Log)
	if err != nil {
		return pipeline.Result{}, err
	}
	units := len(s.m.units())
	// Locally one shard: its batches already fill every core.
	shards := 1
	w := executor.Work{Name: "logs", Args: s.args,
		Local: func(ctx context.Context, i int) ([]byte, error) {
			p, err := s.runShard(ctx, eval.Shard{Index: i, Count: shards}, env.OutDir, env.Log, env.Progress)
			if err != nil {
				return nil, err
			}
			return json.Marshal(p)
		}}
	if s.exec.Kind == "kubernetes" {
		shards = s.exec.ShardCount(units)
		env.Progress.Start(int64(shards), "shards")
		last := 0
		w.Progress = func(done, _ int) { env.Progress.Add(int64(done - last)); last = done }
	} else {
		env.Progress.Start(int64(units), "units")
	}
	w.Shards = shards
	parts, err := x.Run(ctx, w)
	if err != nil {
		return pipeline.Result{}, err
	}
	count, err := s.merge(ctx, parts, env.OutDir, env.Log)
	if err != nil {
		return pipeline.Result{}, err
	}
	m, err := s.m.metric(count)
	if err != nil {
		return pipeline.Result{}, err
	}
	return pipeline.Result{Metric: &m}, nil
}

// runShard writes the logs of shard sh's units (those whose position modulo the shard count
// is its index) into dir, in batches of one unit per CPU, so progress moves and a cancel
// stops between batches.
func (s *shardedLogs) runShard(ctx context.Context, sh eval.Shard, dir string, log *slog.Logger, progress pipeline.Progress) (expertPart, error) {
	labels := s.m.units()
	p := expertPart{Schema: ExpertLogsPartSchema, Shard: sh.Index, Shards: sh.Count, Files: s.m.files()}
	var mine []int
	for i := sh.Index; i < len(labels); i += sh.Count {
		mine = append(mine, i)
	}
	for batch := range slices.Chunk(mine, runtime.GOMAXPROCS(0)) {
		if err := ctx.Err(); err != nil {
			return p, err
		}
		made, err := s.m.make(ctx, batch, dir, log)
		if err != nil {
			return p, err
		}
		for j, u := range batch {
			ul := unitLogs{Unit: labels[u], Logs: []expertLog{}}
			for _, l := range made[j] {
				sum, err := pipeline.HashFile(filepath.Join(dir, l.Name))
				if err != nil {
					return p, fmt.Errorf("%s: %w", labels[u], err)
				}
				ul.Logs = append(ul.Logs, expertLog{Name: l.Name, SHA256: sum, Count: l.Count})
			}
			p.Units = append(p.Units, ul)
		}
		if progress != nil {
			progress.Add(int64(len(batch)))
		}
	}
	return p, nil
}

// ExpertLogsShard is a pod's side of the logs stage: it makes shard sh of the expert logs of
// cfg's family (finetune.env) in a temporary folder, stores each log under prefix by its
// sha256 and returns the part.
func ExpertLogsShard(ctx context.Context, cfg config.Config, sh eval.Shard, prefix string, log *slog.Logger) ([]byte, error) {
	f, ok := family.Get(cfg.Finetune.Env)
	if !ok || f.ExpertLogs == nil {
		return nil, fmt.Errorf("finetune.env: %q makes no expert logs", cfg.Finetune.Env)
	}
	st, err := f.ExpertLogs(cfg)
	if err != nil {
		return nil, err
	}
	s, ok := st.(*shardedLogs)
	if !ok {
		return nil, fmt.Errorf("finetune.env: %q: its logs stage does not run in shards", cfg.Finetune.Env)
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
	for _, u := range p.Units {
		for i, l := range u.Logs {
			key, sum, err := executor.PutBlob(ctx, cfg.Registry, prefix, filepath.Join(dir, l.Name))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", u.Unit, err)
			}
			if sum != l.SHA256 {
				return nil, fmt.Errorf("%s: %s changed while it was stored", u.Unit, l.Name)
			}
			u.Logs[i].Key = key
		}
	}
	return json.Marshal(p)
}

// merge checks that the parts hold every unit once, each from its own shard and the same
// input files, with logs named for their unit and no name twice; it fetches the logs stored
// elsewhere into dir and checks every log's sha256. It returns the sum of the logs' counts.
func (s *shardedLogs) merge(ctx context.Context, parts [][]byte, dir string, log *slog.Logger) (int, error) {
	labels := s.m.units()
	shardOf := map[string]int{}
	for i, l := range labels {
		shardOf[l] = i % len(parts)
	}
	files := s.m.files()
	seen, names := map[string]bool{}, map[string]bool{}
	var fetched []string
	count := 0
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
		case !slices.Equal(p.Files, files):
			return 0, fmt.Errorf("logs part of shard %d/%d: made from input files %v, this config's are %v (an image of another commit?)",
				n, len(parts), p.Files, files)
		}
		for _, u := range p.Units {
			if sh, ok := shardOf[u.Unit]; !ok || sh != n || seen[u.Unit] {
				return 0, fmt.Errorf("logs part of shard %d/%d: %s is not its own or comes twice", n, len(parts), u.Unit)
			}
			seen[u.Unit] = true
			for _, l := range u.Logs {
				ok := l.Name == u.Unit+".jsonl" || (strings.HasPrefix(l.Name, u.Unit+"-") && strings.HasSuffix(l.Name, ".jsonl"))
				if !ok || l.Name != filepath.Base(l.Name) || names[l.Name] {
					return 0, fmt.Errorf("logs part of shard %d/%d: %s: log %q is not named for it or comes twice", n, len(parts), u.Unit, l.Name)
				}
				names[l.Name] = true
				path := filepath.Join(dir, l.Name)
				if l.Key != "" {
					if err := executor.FetchBlob(ctx, s.store, l.Key, l.SHA256, path); err != nil {
						return 0, fmt.Errorf("%s: %w", u.Unit, err)
					}
					fetched = append(fetched, l.Key)
				}
				if sum, err := pipeline.HashFile(path); err != nil || sum != l.SHA256 {
					return 0, fmt.Errorf("%s: %s is not the log its shard made (sha256 %s, want %s, %v)", u.Unit, path, sum, l.SHA256, err)
				}
				count += l.Count
			}
		}
	}
	for _, l := range labels {
		if !seen[l] {
			return 0, fmt.Errorf("logs parts: %s (shard %d/%d) is missing", l, shardOf[l], len(parts))
		}
	}
	if err := executor.DeleteBlobs(ctx, s.store, fetched); err != nil {
		log.Warn("stored logs not deleted", "err", err)
	}
	return count, nil
}

// decodeStrict reads JSON refusing unknown fields: a part of another layout is not half read.
func decodeStrict(data []byte, into any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(into)
}
