// Package eval runs placement policies (heuristics or checkpoints) on held-out workloads in the
// ATC'23 arrival protocol and writes metrics.json, curves.csv, figures and a report. RunTimed
// does the same for timed workloads (timed.go): DL jobs, the fungible world, openb timed tasks,
// one file per kind.
//
// Policies are resolved through a [Resolver] that the caller provides, so this package stays
// free of libtorch: [Heuristics] resolves package policy's names, and the command layer adds
// checkpoints and registry references. Every reference is resolved and every trace loaded before
// the first run starts.
package eval

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/schedrl/schedrl/internal/atomicfile"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/sim"
)

// PolicyFactory makes a fresh placer for one run, so that runs share no mutable state.
type PolicyFactory func() (sim.Placer, error)

// Resolver turns a parsed reference into a factory, or an error that names the reference.
type Resolver func(PolicyRef) (PolicyFactory, error)

// Options are what Run needs besides the config section.
type Options struct {
	Resolve Resolver // nil resolves heuristics only
	// Learned resolves the timed kinds' checkpoints and registry references (a kind without
	// one: its methods and baselines only).
	Learned Learned
	// DefragOnline is the defrag-online kind's timelines, trigger and budget.
	DefragOnline *config.DefragOnlineConfig
	Force        bool         // replace an existing output directory
	Log          *slog.Logger // nil: slog.Default()
	Progress     bool         // draw a progress bar (on a terminal); else log a line per run
	// Remote, when set, runs the cells in Shards shards (at most one per cell), here or
	// elsewhere, and Run merges their parts (shard.go); the report is the one a run without
	// Remote writes.
	Remote Remote
	Shards int
	// Fetched are the ckpt:DIR directories that Resolve fetches from elsewhere (the
	// checkpoints shipped to an executor's pod), which need not exist here.
	Fetched map[string]bool
}

// Run evaluates cfg.Policies on cfg.Traces x cfg.Seeds and writes the report to cfg.Out.
func Run(ctx context.Context, cfg config.EvalConfig, opts Options) (*Metrics, error) {
	start := time.Now()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("eval config: %w", err)
	}
	if cfg.Timed.Kind != "" {
		return nil, fmt.Errorf("eval config: timed.kind is %q: timed workloads run through RunTimed", cfg.Timed.Kind)
	}
	log := opts.Log
	if log == nil {
		log = slog.Default()
	}
	plan, err := prepare(cfg, opts.Resolve, opts.Fetched)
	if err != nil {
		return nil, err
	}
	out, err := createReportDir(cfg.Out, opts.Force)
	if err != nil {
		return nil, err
	}
	defer out.Abort()
	log.Info("eval: starting", "policies", len(plan.refs), "traces", len(plan.traces),
		"seeds", len(plan.seeds), "runs", len(plan.jobs()), "parallelism", plan.workers)
	var runs []SeedRun
	if opts.Remote != nil {
		shards := min(max(opts.Shards, 1), len(plan.jobs()))
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
		cells := make([]int, len(plan.jobs()))
		for i := range cells {
			cells[i] = i
		}
		if runs, err = plan.runCells(ctx, cells, log, opts.Progress); err != nil {
			return nil, err
		}
	}
	m := plan.metrics(runs)
	m.WallSeconds = time.Since(start).Seconds()
	if err := writeOutputs(out.Tmp, m, plan); err != nil {
		return nil, err
	}
	if err := out.Commit(); err != nil {
		return nil, err
	}
	log.Info("eval: done", "out", cfg.Out, "wall_seconds", fmt.Sprintf("%.1f", time.Since(start).Seconds()))
	return m, nil
}

func writeOutputs(dir string, m *Metrics, plan *plan) error {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("metrics.json: %w", err)
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, "metrics.json"), append(data, '\n'), 0o644); err != nil {
		return err
	}
	if err := writeCurves(filepath.Join(dir, "curves.csv"), m.Results); err != nil {
		return err
	}
	names := labels(plan.refs)
	if err := writeFigures(dir, m, plan.refs, names, plan.paper); err != nil {
		return err
	}
	return writeReport(dir, m, names)
}

// Score returns one metric per policy and trace, seed by seed (Scores[policy][trace][i] is the
// run on Seeds[i]), the form the pipeline's champion gate compares. Metric names are
// metrics.json keys.
func (m *Metrics) Score(metric string) (map[string]map[string][]float64, error) {
	pick := map[string]func(SeedRun) float64{
		"alloc_gpu_pct_100":  func(r SeedRun) float64 { return r.AllocGPUPct100 },
		"alloc_gpu_pct_130":  func(r SeedRun) float64 { return r.AllocGPUPct130 },
		"frag_ratio_pct_100": func(r SeedRun) float64 { return r.FragRatioPct100 },
		"frag_ratio_pct_130": func(r SeedRun) float64 { return r.FragRatioPct130 },
		"frag_gpu_130":       func(r SeedRun) float64 { return r.FragGPU130 },
	}[metric]
	if pick == nil {
		return nil, fmt.Errorf("metric %q: want alloc_gpu_pct_100, alloc_gpu_pct_130, frag_ratio_pct_100, frag_ratio_pct_130 or frag_gpu_130", metric)
	}
	s := map[string]map[string][]float64{}
	for i := range m.Results {
		r := &m.Results[i]
		if s[r.Policy] == nil {
			s[r.Policy] = map[string][]float64{}
		}
		xs := make([]float64, len(r.PerSeed))
		for j, run := range r.PerSeed {
			xs[j] = pick(run)
		}
		s[r.Policy][r.Trace] = xs
	}
	return s, nil
}

// fileExists reports a missing path as an error naming it.
func fileExists(what, path string) error {
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// createReportDir starts the report directory under a temporary name, readable by everyone (a
// report is for everyone to read); the caller commits or aborts it.
func createReportDir(path string, force bool) (*atomicfile.Dir, error) {
	out, err := atomicfile.CreateDir(path, force)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(out.Tmp, 0o755); err != nil {
		out.Abort()
		return nil, err
	}
	return out, nil
}
