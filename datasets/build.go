package datasets

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/internal/atomicfile"
	"github.com/schedrl/schedrl/sim"
)

// BuildOptions configures Build.
type BuildOptions struct {
	Logs         string // glob of decision logs
	Env          string // environment name, one with rows (registerRowEnv)
	Out          string // dataset directory
	Force        bool   // replace an existing Out
	Nodes        string // optional node-list CSV every log header must match
	ValFraction  float64
	Seed         uint64 // chooses the validation episodes
	ShardRows    int
	RowGroupRows int
	Workers      int         // 0: one per CPU
	EnvOptions   env.Options // placement rewards
	// Defrag holds the defrag reward weights; each episode's budget and placer come from its
	// log's header (meta "budget" and "placer", as defrag plan --log and defrag demos write).
	Defrag env.DefragOptions
	Gamma  float64 // discount of the stored return-to-go
}

// BuildStats reports what Build did.
type BuildStats struct {
	Rows, Episodes int64
	Bytes          int64 // Parquet bytes written
	Elapsed        time.Duration
}

// Build replays every log matching o.Logs through the environment, checks each logged decision,
// and writes the dataset to o.Out through a temporary directory: a failed build leaves nothing.
func Build(o BuildOptions) (*Manifest, BuildStats, error) {
	start := time.Now()
	renv, ok := rowEnvs[o.Env]
	if !ok {
		return nil, BuildStats{}, fmt.Errorf("env %q: datasets can be built for %s", o.Env, rowEnvNames())
	}
	spec, _ := env.SpecOf(o.Env)
	if o.ShardRows < 1 || o.RowGroupRows < 1 || o.Gamma <= 0 || o.Gamma > 1 || o.ValFraction < 0 || o.ValFraction >= 1 {
		return nil, BuildStats{}, fmt.Errorf("invalid options: shard rows %d, row group rows %d, gamma %v, val fraction %v",
			o.ShardRows, o.RowGroupRows, o.Gamma, o.ValFraction)
	}
	logs, err := atomicfile.Glob(o.Logs)
	if err != nil {
		return nil, BuildStats{}, fmt.Errorf("logs %q: %w", o.Logs, err)
	}
	if len(logs) == 0 {
		return nil, BuildStats{}, fmt.Errorf("logs %q: no file matches", o.Logs)
	}
	sort.Strings(logs)
	var nodes []sim.Node
	if o.Nodes != "" {
		if nodes, err = sim.LoadNodes(o.Nodes); err != nil {
			return nil, BuildStats{}, err
		}
	}
	dir, err := atomicfile.CreateDir(o.Out, o.Force)
	if err != nil {
		return nil, BuildStats{}, err
	}
	defer dir.Abort()

	optsJSON, _ := json.Marshal(renv.options(o))
	m := &Manifest{
		SchemaVersion: SchemaVersion, FeatureSpec: spec.Version, Env: o.Env, EnvOptions: optsJSON,
		ValFraction: o.ValFraction, SplitSeed: o.Seed, Gamma: o.Gamma, Splits: map[string]*SplitInfo{},
	}
	names := make([]string, len(logs))
	for i, l := range logs {
		names[i] = filepath.Base(l)
	}
	splits := assignSplits(names, o.ValFraction, o.Seed)
	writers := map[string]*shardWriter[Row]{}
	for _, s := range []string{SplitTrain, SplitVal} {
		writers[s] = newShardWriter[Row](dir.Tmp, s, SchemaVersion, o.ShardRows, o.RowGroupRows)
		m.Splits[s] = &SplitInfo{}
	}
	contexts := map[string]string{} // sha256 -> relative path
	var reward, ret statsAcc
	var stats BuildStats
	err = replayAll(logs, o, nodes, renv.replay, func(i int, ep *episode) error {
		ctxPath, err := writeContext(dir.Tmp, ep.context, contexts, m)
		if err != nil {
			return err
		}
		split := splits[i]
		for k := range ep.rows {
			ep.rows[k].Episode = int32(i)
		}
		segs, err := writers[split].write(ep.rows)
		if err != nil {
			return err
		}
		for _, r := range ep.rows {
			reward.add(float64(r.Reward))
		}
		ret.add(ep.ret)
		m.Logs = append(m.Logs, ep.log)
		m.Episodes = append(m.Episodes, EpisodeInfo{
			ID: int32(i), Name: names[i], Log: logs[i], Split: split, Rows: int64(len(ep.rows)),
			Failed: ep.failed, Return: ep.ret, Context: ctxPath, Segments: segs,
		})
		m.Splits[split].Rows += int64(len(ep.rows))
		m.Splits[split].Episodes++
		m.Rows += int64(len(ep.rows))
		slog.Info("datasets: episode", "log", logs[i], "split", split, "rows", len(ep.rows), "failed", ep.failed)
		return nil
	})
	if err != nil {
		return nil, BuildStats{}, err
	}
	for _, s := range []string{SplitTrain, SplitVal} {
		shards, err := writers[s].finish()
		if err != nil {
			return nil, BuildStats{}, err
		}
		m.Splits[s].Shards = shards
		for _, sh := range shards {
			stats.Bytes += sh.Bytes
		}
	}
	if m.Rows == 0 {
		return nil, BuildStats{}, fmt.Errorf("logs hold no %s decisions", o.Env)
	}
	m.Reward, m.Return = reward.stats(), ret.stats()
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, BuildStats{}, err
	}
	if err := os.WriteFile(filepath.Join(dir.Tmp, ManifestFile), append(data, '\n'), 0o644); err != nil {
		return nil, BuildStats{}, err
	}
	if err := dir.Commit(); err != nil {
		return nil, BuildStats{}, err
	}
	stats.Rows, stats.Episodes, stats.Elapsed = m.Rows, int64(len(m.Episodes)), time.Since(start)
	return m, stats, nil
}

// replayFunc turns one decision log into an episode of an environment's transitions.
type replayFunc func(path string, o BuildOptions, nodes []sim.Node) (*episode, error)

// rowEnv is how an environment's transitions-v1 rows are made and read back: each
// environment registers its own (registerRowEnv) in its file.
type rowEnv struct {
	replay replayFunc
	// options are the environment's options of o, recorded in the manifest.
	options func(o BuildOptions) any
	// decodeStart decodes one of its context files.
	decodeStart func(data []byte) (start, error)
}

var rowEnvs = map[string]rowEnv{}

// registerRowEnv adds the rows of the environment name; a second registration is a programming
// error.
func registerRowEnv(name string, r rowEnv) {
	if _, dup := rowEnvs[name]; dup {
		panic("datasets: rows of " + name + " registered twice")
	}
	rowEnvs[name] = r
}

// rowEnvNames lists the environments with rows, quoted and sorted, for errors.
func rowEnvNames() string {
	var q []string
	for _, n := range slices.Sorted(maps.Keys(rowEnvs)) {
		q = append(q, strconv.Quote(n))
	}
	return strings.Join(q, ", ")
}

// writeContext stores an episode's start once per distinct content and returns its path.
func writeContext(root string, ctx any, seen map[string]string, m *Manifest) (string, error) {
	data, err := json.Marshal(ctx)
	if err != nil {
		return "", err
	}
	sum := sha256Hex(data)
	if p, ok := seen[sum]; ok {
		return p, nil
	}
	rel := "contexts/" + sum[:16] + ".json"
	if err := os.MkdirAll(filepath.Join(root, "contexts"), 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(root, filepath.FromSlash(rel)), data, 0o644); err != nil {
		return "", err
	}
	seen[sum] = rel
	m.Contexts = append(m.Contexts, FileInfo{Path: rel, Bytes: int64(len(data)), SHA256: sum})
	return rel, nil
}

// replayAll replays logs on o.Workers goroutines and hands the episodes to write in log order,
// holding at most Workers episodes in memory. The first error stops the build.
func replayAll(logs []string, o BuildOptions, nodes []sim.Node, replay replayFunc, write func(i int, ep *episode) error) error {
	workers := o.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	type result struct {
		ep  *episode
		err error
	}
	results := make([]chan result, len(logs))
	for i := range results {
		results[i] = make(chan result, 1)
	}
	slots := make(chan struct{}, workers)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for i, path := range logs {
			select {
			case slots <- struct{}{}:
			case <-stop:
				return
			}
			go func() {
				ep, err := replay(path, o, nodes)
				results[i] <- result{ep, err}
			}()
		}
	}()
	for i := range logs {
		r := <-results[i]
		if r.err != nil {
			return r.err
		}
		if err := write(i, r.ep); err != nil {
			return err
		}
		<-slots
	}
	return nil
}
