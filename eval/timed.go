package eval

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/schedrl/schedrl/internal/atomicfile"
	"github.com/schedrl/schedrl/internal/config"
)

// A timedKind is one timed world eval can run (eval.timed.kind); each kind's file registers
// itself. prepare checks the kind's keys, loads what every run shares (cluster, tables, the
// workloads of cfg.Traces for every seed) and checks or resolves cfg.Policies (through opts'
// resolvers), so a bad input fails before any run; errors name the key or the reference.
type timedKind interface {
	prepare(cfg config.EvalConfig, seeds []uint64, opts Options) (timedWorld, error)
	// workloadName is the name a cfg.Traces entry is reported under (the gate checks its
	// workloads against these before any run).
	workloadName(raw, tracesDir string) (string, error)
}

// A timedWorld runs one policy (an index into cfg.Policies) on one workload (an index into
// cfg.Traces) and seed (an index into the seeds); runs share nothing mutable.
type timedWorld interface {
	workloads() []string // output names, in cfg.Traces order
	describe() string    // the cluster, for the report
	// seeded tells whether the seed changes a workload's runs; one that it does not (a Gavel
	// trace file under schedrl's rounds, which draw nothing at random) runs once, on the first
	// seed, since copies would pose as independent samples with an interval of zero.
	seeded(workload int) bool
	run(policy, workload, seed int) (TimedSeedRun, error)
}

var timedKinds = map[string]timedKind{}

func registerTimedKind(name string, k timedKind) { timedKinds[name] = k }

// Learned are the resolvers of the timed kinds whose policies may be networks, keyed by the
// name the kind registers under (eval.timed.kind), each of its kind's own type
// (DefragResolver, FungibleResolver): the command layer provides them, since eval links no
// network.
type Learned map[string]any

// learnedResolver is kind's resolver in l, or the zero R (none); one of another type is a
// programming error.
func learnedResolver[R any](l Learned, kind string) R {
	var r R
	if v, ok := l[kind]; ok {
		if r, ok = v.(R); !ok {
			panic(fmt.Sprintf("eval: Learned[%q] is a %T, want a %T", kind, v, r))
		}
	}
	return r
}

// A gavelKind's world reads Gavel's tables and trace files (or generates its workloads) instead
// of eval.nodes and trace references.
type gavelKind interface{ gavelTables() }

// InputFiles are the files, by name, whose content decides cfg's numbers: what an evaluation's
// cache key hashes. A Gavel world's are its tables and trace files; any other's eval.nodes,
// the paper's numbers when overlaid, and the trace references resolved (their error
// unwrapped, for the caller to name the key).
func InputFiles(cfg config.EvalConfig) (map[string]string, error) {
	if _, ok := timedKinds[cfg.Timed.Kind].(gavelKind); ok {
		t := cfg.Timed
		files := map[string]string{"throughputs": t.Throughputs, "profiles": t.Profiles, "synergy_map": t.SynergyMap}
		for _, raw := range cfg.Traces {
			if raw = strings.TrimSpace(raw); !strings.HasPrefix(raw, "jobs=") {
				files["trace "+raw] = raw
			}
		}
		return files, nil
	}
	files := map[string]string{"nodes": cfg.Nodes}
	if cfg.PaperOverlay {
		files["paper"] = cfg.Paper
	}
	for _, t := range cfg.Traces {
		ref, err := ParseTraceRef(t, cfg.TracesDir)
		if err != nil {
			return nil, err
		}
		files["trace "+ref.Name] = ref.Path
	}
	return files, nil
}

// A localKind's world reads config that no eval flag carries, so a pod, which gets the eval
// section as flags, cannot run it.
type localKind interface{ localOnly() }

// LocalOnly tells whether the timed kind runs on the local executor only.
func LocalOnly(kind string) bool {
	_, ok := timedKinds[kind].(localKind)
	return ok
}

// timedPlan is a timed evaluation resolved and loaded: its world and its cells (runs), in
// the order of the report; result k's runs are cells[first[k]:first[k+1]].
type timedPlan struct {
	cfg      config.EvalConfig
	world    timedWorld
	policies []string
	names    []string
	seeds    []uint64
	cells    []timedCell
	first    []int
	workers  int
}

type timedCell struct{ policy, workload, seed int }

// prepareTimed checks cfg, resolves the policies and loads the world; a failure here means
// no work was done.
func prepareTimed(cfg config.EvalConfig, opts Options) (*timedPlan, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("eval config: %w", err)
	}
	kind, ok := timedKinds[cfg.Timed.Kind]
	if !ok {
		return nil, fmt.Errorf("eval config: timed.kind: %q, want one of %s", cfg.Timed.Kind, strings.Join(config.TimedKinds, ", "))
	}
	seeds, err := config.ParseSeeds(cfg.Seeds)
	if err != nil {
		return nil, fmt.Errorf("seeds: %w", err)
	}
	policies, err := timedPolicies(cfg.Policies)
	if err != nil {
		return nil, err
	}
	if opts.Resolve == nil {
		opts.Resolve = Heuristics
	}
	world, err := kind.prepare(cfg, seeds, opts)
	if err != nil {
		return nil, err
	}
	names := world.workloads()
	if err := distinctFileNames(names); err != nil {
		return nil, err
	}
	p := &timedPlan{cfg: cfg, world: world, policies: policies, names: names, seeds: seeds,
		first: make([]int, len(policies)*len(names)+1), workers: cfg.Parallelism}
	for pi := range policies {
		for w := range names {
			n := len(seeds)
			if !world.seeded(w) {
				n = 1
			}
			for s := range n {
				p.cells = append(p.cells, timedCell{pi, w, s})
			}
			p.first[pi*len(names)+w+1] = len(p.cells)
		}
	}
	if p.workers == 0 {
		p.workers = runtime.GOMAXPROCS(0)
	}
	return p, nil
}

// runCells runs the cells at indexes on a bounded pool; results land at the cell's index.
func (p *timedPlan) runCells(ctx context.Context, indexes []int, log *slog.Logger, bar bool) ([]TimedSeedRun, error) {
	runs := make([]TimedSeedRun, len(p.cells))
	progress := newProgress(len(indexes), bar, log)
	err := runPool(ctx, indexes, p.workers, func(i int) error {
		c := p.cells[i]
		began := time.Now()
		run, err := p.world.run(c.policy, c.workload, c.seed)
		if err != nil {
			return fmt.Errorf("policy %q on workload %q seed %d: %w", p.policies[c.policy], p.names[c.workload], p.seeds[c.seed], err)
		}
		run.Seed, run.WallSeconds = p.seeds[c.seed], time.Since(began).Seconds()
		runs[i] = run
		progress.done(p.policies[c.policy], p.names[c.workload], run.Seed, run.WallSeconds, "avg_jct_s", fmt.Sprintf("%.0f", run.AvgJCT))
		return nil
	})
	progress.finish()
	if err != nil {
		return nil, err
	}
	return runs, nil
}

// RunTimed evaluates cfg.Policies on the timed workloads cfg.Traces x cfg.Seeds of the world
// cfg.Timed.Kind and writes metrics.json, jct.csv, series.csv, the figures and the report to
// cfg.Out, all or nothing. With opts.Remote, the cells run elsewhere and their parts are
// merged (shard.go).
func RunTimed(ctx context.Context, cfg config.EvalConfig, opts Options) (*TimedMetrics, error) {
	start := time.Now()
	log := opts.Log
	if log == nil {
		log = slog.Default()
	}
	plan, err := prepareTimed(cfg, opts)
	if err != nil {
		return nil, err
	}
	out, err := createReportDir(cfg.Out, opts.Force)
	if err != nil {
		return nil, err
	}
	defer out.Abort()
	log.Info("eval: starting timed", "kind", cfg.Timed.Kind, "policies", len(plan.policies), "workloads", len(plan.names),
		"seeds", len(plan.seeds), "runs", len(plan.cells), "parallelism", plan.workers)
	var runs []TimedSeedRun
	if opts.Remote != nil {
		shards := min(max(opts.Shards, 1), len(plan.cells))
		log.Info("eval: cells in shards", "shards", shards)
		parts, err := opts.Remote(ctx, shards, func(ctx context.Context, i int) ([]byte, error) {
			return plan.shardPart(ctx, Shard{i, shards}, log, opts.Progress)
		})
		if err != nil {
			return nil, err
		}
		if runs, err = plan.merge(parts); err != nil {
			return nil, err
		}
	} else {
		all := make([]int, len(plan.cells))
		for i := range all {
			all[i] = i
		}
		if runs, err = plan.runCells(ctx, all, log, opts.Progress); err != nil {
			return nil, err
		}
	}
	policies, names := plan.policies, plan.names
	m := &TimedMetrics{Schema: TimedSchemaVersion, Kind: cfg.Timed.Kind, Cluster: plan.world.describe(),
		Policies: policies, Workloads: names, Seeds: plan.seeds, Baseline: policies[0]}
	if b := strings.TrimSpace(cfg.Baseline); b != "" {
		m.Baseline = b
	}
	for p := range policies {
		for w := range names {
			k := p*len(names) + w
			m.Results = append(m.Results, aggregateTimed(policies[p], names[w], runs[plan.first[k]:plan.first[k+1]]))
		}
	}
	m.pairWithBaseline()
	m.WallSeconds = time.Since(start).Seconds()
	if err := writeTimedOutputs(out.Tmp, m); err != nil {
		return nil, err
	}
	if err := out.Commit(); err != nil {
		return nil, err
	}
	log.Info("eval: done", "out", cfg.Out, "wall_seconds", fmt.Sprintf("%.1f", m.WallSeconds))
	return m, nil
}

// timedPolicies are cfg.Policies trimmed, each once.
func timedPolicies(list []string) ([]string, error) {
	var out []string
	for i, p := range list {
		p = strings.TrimSpace(p)
		if slices.Contains(out, p) {
			return nil, fmt.Errorf("policies[%d]: %q is listed twice", i, p)
		}
		out = append(out, p)
	}
	return out, nil
}

// fileName is a workload name made safe for a file name ("jobs=300,lam=1200" ->
// "jobs-300_lam-1200").
func fileName(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			return r
		case r == '=':
			return '-'
		}
		return '_'
	}, name)
}

// distinctFileNames refuses two workloads whose figures would share a file.
func distinctFileNames(names []string) error {
	seen := map[string]string{}
	for _, n := range names {
		if other, ok := seen[fileName(n)]; ok {
			return fmt.Errorf("traces: %q and %q would write the same figures (%s): rename one", other, n, fileName(n))
		}
		seen[fileName(n)] = n
	}
	return nil
}

func writeTimedOutputs(dir string, m *TimedMetrics) error {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("metrics.json: %w", err)
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, "metrics.json"), append(data, '\n'), 0o644); err != nil {
		return err
	}
	if err := writeTimedCSVs(dir, m); err != nil {
		return err
	}
	if err := writeTimedFigures(dir, m); err != nil {
		return err
	}
	return writeBlocks(dir, timedReportBlocks(m))
}

// sortedKeys is a map's keys in order, so outputs do not depend on map iteration.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
