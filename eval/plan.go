package eval

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/sim"
)

// typicalCoverage is the FGD measure's share of tasks that typical shapes must cover.
const typicalCoverage = 0.95

// plan is everything resolved and loaded before the first run: a failure here means no work
// was done and nothing was written.
type plan struct {
	cfg       config.EvalConfig
	refs      []PolicyRef
	factories []PolicyFactory
	traces    []TraceRef
	seeds     []uint64
	workloads [][]*sim.Prepared // [trace][seed], read-only once prepared
	paper     Paper             // nil without overlay
	workers   int
	capGPU    int64 // milli
}

// job is one run: indexes into plan.refs, plan.traces and plan.seeds.
type job struct{ policy, trace, seed int }

func (p *plan) jobs() []job {
	var js []job
	for i := range p.refs {
		for t := range p.traces {
			for s := range p.seeds {
				js = append(js, job{i, t, s})
			}
		}
	}
	return js
}

// prepare parses every reference, loads the cluster and traces, samples each workload and then
// resolves the policies. Errors name the reference at fault.
func prepare(cfg config.EvalConfig, resolve Resolver, fetched map[string]bool) (*plan, error) {
	p := &plan{cfg: cfg, workers: cfg.Parallelism}
	if p.workers == 0 {
		p.workers = runtime.GOMAXPROCS(0)
	}
	var err error
	if p.seeds, err = config.ParseSeeds(cfg.Seeds); err != nil {
		return nil, fmt.Errorf("seeds: %w", err)
	}
	if resolve == nil {
		resolve = Heuristics
	}
	seen := map[string]bool{}
	for _, s := range cfg.Policies {
		ref, err := ParsePolicyRef(s)
		if err != nil {
			return nil, err
		}
		key := ref.Raw
		switch ref.Kind {
		case Heuristic:
			key = ref.Name // names are case-insensitive
		case Checkpoint:
			key = "ckpt:" + filepath.Clean(ref.Dir)
		}
		if seen[key] {
			return nil, fmt.Errorf("policy %q is listed twice", ref.Raw)
		}
		seen[key] = true
		if ref.Kind == Checkpoint && !fetched[ref.Dir] {
			if err := fileExists(fmt.Sprintf("policy %q: checkpoint", ref.Raw), ref.Dir); err != nil {
				return nil, err
			}
		}
		p.refs = append(p.refs, ref)
	}
	if _, err := sim.LoadNodes(cfg.Nodes); err != nil {
		return nil, fmt.Errorf("nodes %q: %w", cfg.Nodes, err)
	}
	seenTrace := map[string]bool{}
	for _, s := range cfg.Traces {
		ref, err := ParseTraceRef(s, cfg.TracesDir)
		if err != nil {
			return nil, err
		}
		if seenTrace[ref.Name] {
			return nil, fmt.Errorf("trace %q is listed twice", ref.Name)
		}
		seenTrace[ref.Name] = true
		// sim.Prepare is the simulator's own composition (typical shapes from the trace before
		// tuning, seeded workload), so eval's numbers are the sim command's.
		perSeed := make([]*sim.Prepared, len(p.seeds))
		for i, seed := range p.seeds {
			exp := sim.Experiment{NodesPath: cfg.Nodes, PodsPath: ref.Path, Tune: cfg.Tune, Seed: seed, Coverage: typicalCoverage}
			if perSeed[i], err = sim.Prepare(exp); err != nil {
				return nil, fmt.Errorf("trace %q seed %d: %w", s, seed, err)
			}
		}
		p.traces, p.workloads = append(p.traces, ref), append(p.workloads, perSeed)
	}
	for _, n := range p.workloads[0][0].Nodes {
		p.capGPU += int64(n.GPUs) * sim.MilliPerGPU
	}
	if cfg.PaperOverlay {
		if p.paper, err = LoadPaper(cfg.Paper); err != nil {
			return nil, fmt.Errorf("paper overlay: %w", err)
		}
	}
	// Last, since resolving may load networks or pull from the registry.
	for _, ref := range p.refs {
		f, err := resolve(ref)
		if err != nil {
			return nil, err
		}
		p.factories = append(p.factories, f)
	}
	return p, nil
}

// runCells runs the jobs at cells (indexes into p.jobs()) on a bounded pool. Results land at
// the job's index, so their order (and every output) is independent of scheduling; the first
// error stops the rest.
func (p *plan) runCells(ctx context.Context, cells []int, log *slog.Logger, bar bool) ([]SeedRun, error) {
	js := p.jobs()
	runs := make([]SeedRun, len(js))
	// Networks cost far more per decision than heuristics: start them first so that the short
	// heuristic runs fill the cores at the end (longest first keeps the makespan short).
	order := slices.Clone(cells)
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Compare(p.costRank(js[a]), p.costRank(js[b]))
	})
	progress := newProgress(len(order), bar, log)
	err := runPool(ctx, order, p.workers, func(i int) error {
		run, err := p.run(js[i])
		if err != nil {
			return err
		}
		runs[i] = run
		progress.done(p.refs[js[i].policy].Raw, p.traces[js[i].trace].Name, run.Seed, run.WallSeconds,
			"alloc_gpu_pct_130", fmt.Sprintf("%.2f", run.AllocGPUPct130))
		return nil
	})
	progress.finish()
	if err != nil {
		return nil, err
	}
	return runs, nil
}

// costRank orders jobs for scheduling: networks before heuristics.
func (p *plan) costRank(j job) int {
	if p.refs[j.policy].Kind == Heuristic {
		return 1
	}
	return 0
}

// run is one policy on one workload, with every decision timed.
func (p *plan) run(j job) (SeedRun, error) {
	ref, trace, seed := p.refs[j.policy], p.traces[j.trace], p.seeds[j.seed]
	where := fmt.Sprintf("policy %q on trace %q seed %d", ref.Raw, trace.Name, seed)
	placer, err := p.factories[j.policy]()
	if err != nil {
		return SeedRun{}, fmt.Errorf("%s: %w", where, err)
	}
	work := p.workloads[j.trace][j.seed]
	timed := &timedPlacer{Placer: placer, micros: make([]float64, 0, len(work.Workload))}
	start := time.Now()
	_, res, err := work.Run(timed, nil)
	if err != nil {
		return SeedRun{}, fmt.Errorf("%s: %w", where, err)
	}
	run := SeedRun{Seed: seed, Tasks: res.Tasks, Placed: res.Placed, FailedByKind: res.FailedByKind,
		Curve: res.Curve, WallSeconds: time.Since(start).Seconds()}
	run.LatencyP50Us = Percentile(timed.micros, 50)
	run.LatencyP99Us = Percentile(timed.micros, 99)
	run.readCurve()
	return run, nil
}

// timedPlacer measures each decision's latency in microseconds.
type timedPlacer struct {
	sim.Placer
	micros []float64
}

func (t *timedPlacer) Place(c *sim.Cluster, task sim.Task, rng *rand.Rand) (sim.Choice, bool) {
	start := time.Now()
	ch, ok := t.Placer.Place(c, task, rng)
	t.micros = append(t.micros, float64(time.Since(start).Nanoseconds())/1e3)
	return ch, ok
}

// metrics aggregates the runs (in job order) into the metrics.json document.
func (p *plan) metrics(runs []SeedRun) *Metrics {
	m := &Metrics{Schema: SchemaVersion, Nodes: p.cfg.Nodes, Tune: p.cfg.Tune, Seeds: p.seeds,
		CapacityGPU: float64(p.capGPU) / sim.MilliPerGPU}
	for _, r := range p.refs {
		m.Policies = append(m.Policies, r.Raw)
	}
	for _, t := range p.traces {
		m.Traces = append(m.Traces, t.Name)
	}
	n := len(p.seeds)
	for i, ref := range p.refs {
		for t, trace := range p.traces {
			k := (i*len(p.traces) + t) * n
			r := aggregate(ref, trace, p.cfg.Tune, runs[k:k+n])
			if c, ok := p.paper.Lookup(ref, trace.Name, p.cfg.Tune); ok {
				r.Paper = c.Point()
			}
			m.Results = append(m.Results, r)
		}
	}
	m.Baseline = m.Policies[0]
	if p.cfg.Baseline != "" {
		m.Baseline = strings.TrimSpace(p.cfg.Baseline)
	}
	m.pairWithBaseline()
	return m
}

// progress reports finished runs: a bar on a terminal, else one log line per run.
type progress struct {
	mu  sync.Mutex
	bar *progressbar.ProgressBar
	log *slog.Logger
	n   int
	of  int
}

func newProgress(total int, bar bool, log *slog.Logger) *progress {
	p := &progress{log: log, of: total}
	if bar {
		p.bar = progressbar.NewOptions(total, progressbar.OptionSetDescription("eval"),
			progressbar.OptionSetWriter(os.Stderr), // stdout carries the command's result
			progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true),
			progressbar.OptionClearOnFinish(), progressbar.OptionShowElapsedTimeOnFinish())
	}
	return p
}

func (p *progress) done(policy, trace string, seed uint64, seconds float64, measures ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	if p.bar != nil {
		p.bar.Add(1)
		return
	}
	attrs := append([]any{"n", fmt.Sprintf("%d/%d", p.n, p.of), "policy", policy, "trace", trace, "seed", seed}, measures...)
	p.log.Info("eval: run done", append(attrs, "seconds", fmt.Sprintf("%.2f", seconds))...)
}

func (p *progress) finish() {
	if p.bar != nil {
		p.bar.Finish()
	}
}
