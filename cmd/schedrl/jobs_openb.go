package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/schedrl/schedrl/eval"
	"github.com/schedrl/schedrl/internal/atomicfile"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/policy"
	"github.com/schedrl/schedrl/sim"
	"github.com/schedrl/schedrl/tasks"
)

// openbJobsOptions is `schedrl jobs openb`: an openb cluster (a node list) and a pod list as
// the trace, whose tasks run for their trace run time (deletion - scheduled).
type openbJobsOptions struct {
	Out          io.Writer
	Nodes, Trace string
	// Load is the offered load of the Poisson resampling (GPU-time demanded per second over
	// the GPU capacity); 0 replays the trace's own creation times.
	Load   float64
	Seed   uint64
	Policy string // placer
	Queue  string // queue discipline: backfill (FIFO with backfill) or fifo
	// Cap cuts run times (seconds; 0: none); Warmup is the unmeasured start (seconds).
	Cap, Warmup float64
	// Duration (seconds) or Count (tasks) ends the arrivals.
	Duration float64
	Count    int
	Coverage float64 // typical-shape coverage of the fragment measure
	// Log is the version-2 decision log to write, Series the time-series CSV (every
	// SeriesStep seconds); "" writes none.
	Log, Series string
	SeriesStep  float64
	JSON        bool
	// Config is where a placement checkpoint's MODEL@ALIAS resolves, and its device.
	Config config.Config
}

// defaultOpenbJobsOptions are the defaults the command's flags start from.
func defaultOpenbJobsOptions() openbJobsOptions {
	return openbJobsOptions{Nodes: filepath.Join("data", "openb", "openb_node_list_gpu_node.csv"), Policy: "fgd", Queue: "backfill",
		Cap: tasks.DefaultCap, Coverage: 0.95, SeriesStep: 60}
}

func newJobsOpenbCmd(runF func(context.Context, *openbJobsOptions) error) *cobra.Command {
	if runF == nil {
		runF = runOpenbJobs
	}
	opts := defaultOpenbJobsOptions()
	cmd := &cobra.Command{
		Use:   "openb --trace PODS.csv",
		Short: "openb tasks in time: arrivals (trace times or Poisson at --load), a queue, placement, run times, departures",
		Long: "Runs an openb pod list on an openb cluster in time (engine's clock): tasks arrive at their trace times, or\n" +
			"Poisson at offered load --load until --tasks or --duration, wait in the --queue discipline, are placed by\n" +
			"--placer and run for their trace run time (cut at --cap). Prints completion time, queueing delay by kind and\n" +
			"GPU allocation after --warmup. See docs/timed.md.",
		Example: "  schedrl jobs openb --trace data/openb/openb_pod_list_default.csv --load 1.0 --tasks 50000 --warmup 3600",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			if !cmd.Flags().Changed("nodes") {
				opts.Nodes = config.RepoFile(opts.Nodes)
			}
			opts.Out, opts.Config = cmd.OutOrStdout(), cfg
			return runF(cmd.Context(), &opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Trace, "trace", "", "openb pod list CSV (the tasks, their creation times and run times)")
	f.StringVar(&opts.Nodes, "nodes", opts.Nodes, "openb node list CSV")
	f.Float64Var(&opts.Load, "load", 0, "offered load for Poisson resampling (GPU-time demanded per second over capacity); 0 keeps the trace's timestamps")
	f.Uint64Var(&opts.Seed, "seed", 0, "seed of the arrivals and the tie order")
	f.StringVar(&opts.Queue, "queue", opts.Queue, "queue discipline: "+strings.Join(tasks.Queues(), ", "))
	addOpenbJobsFlags(f, &opts, "")
	f.BoolVar(&opts.JSON, "json", false, "print a JSON object")
	config.AddFlags(f, "")
	return cmd
}

// addOpenbJobsFlags adds the flags of the openb world's placement, run times, measurement and
// outputs; scope prefixes their help where other worlds share the command.
func addOpenbJobsFlags(f *pflag.FlagSet, o *openbJobsOptions, scope string) {
	f.StringVar(&o.Policy, "placer", o.Policy, scope+"the placer ("+strings.Join(tasks.PlacerNames(), ", ")+", or a placement checkpoint ckpt:DIR or MODEL@ALIAS)")
	f.Float64Var(&o.Cap, "cap", o.Cap, scope+"cut run times to this many seconds (0: none; the trace's longest tasks run for months)")
	f.Float64Var(&o.Warmup, "warmup", o.Warmup, scope+"seconds from the start left out of the measures")
	f.Float64Var(&o.Duration, "duration", o.Duration, scope+"seconds of Poisson arrivals (or --tasks)")
	f.IntVar(&o.Count, "tasks", o.Count, scope+"number of Poisson arrivals (or --duration)")
	f.StringVar(&o.Series, "series", "", scope+"write the allocation/queue time series CSV here")
	f.Float64Var(&o.SeriesStep, "series-step", o.SeriesStep, scope+"seconds between time-series points")
	markOutput(f, "series", fileOutput)
	if scope == "" {
		f.StringVar(&o.Log, "log", "", "write the version-2 decision log here (docs/decision-log.md)")
		markOutput(f, "log", fileOutput)
	}
}

// openbJobsSummary is the printed result. jobs counts the measured tasks (arrived after the
// warm-up); jct_s maps their arrival index to their completion time.
type openbJobsSummary struct {
	Policy       string                 `json:"policy"`
	Queue        string                 `json:"queue"`
	Seed         uint64                 `json:"seed"`
	Load         float64                `json:"load"`
	OfferedLoad  float64                `json:"offered_load"`
	CapS         float64                `json:"cap_s"`
	Capped       int                    `json:"capped"`
	WarmupS      float64                `json:"warmup_s"`
	Arrived      int                    `json:"tasks_arrived"`
	Rejected     int                    `json:"rejected"`
	TraceSamples int                    `json:"trace_run_time_samples"`
	TracePending int                    `json:"trace_pending"`
	Jobs         int                    `json:"jobs"`
	AvgJCT       float64                `json:"avg_jct_s"`
	JCTP50       float64                `json:"jct_p50_s"`
	JCTP95       float64                `json:"jct_p95_s"`
	JCTP99       float64                `json:"jct_p99_s"`
	Makespan     float64                `json:"makespan_s"`
	Utilization  float64                `json:"utilization"`
	AllocMean    float64                `json:"alloc_gpu_mean_pct"`
	FragMean     float64                `json:"frag_gpu_mean"`
	DelayMean    float64                `json:"queue_delay_mean_s"`
	DelayP95     float64                `json:"queue_delay_p95_s"`
	GPUDelayMean float64                `json:"gpu_queue_delay_mean_s"`
	GPUDelayP95  float64                `json:"gpu_queue_delay_p95_s"`
	DelayByKind  map[string]tasks.Stats `json:"queue_delay_by_kind"`
	Events       int64                  `json:"events"`
	Log          string                 `json:"log,omitempty"`
	Series       string                 `json:"series,omitempty"`
	WallSeconds  float64                `json:"wall_seconds"`
	JCT          map[int]float64        `json:"jct_s"`
}

// runOpenbJobs is `jobs openb` without cobra: it loads the cluster and trace, builds the
// workload, runs it through the event engine and prints the summary (JSON with o.JSON).
func runOpenbJobs(ctx context.Context, o *openbJobsOptions) error {
	stdout := o.Out
	began := time.Now()
	resolve, cleanup := openbPlacers(o.Config, slog.Default())
	defer cleanup()
	placer, err := resolve(o.Policy)
	if err != nil {
		return fmt.Errorf("jobs: %w", err)
	}
	queue, err := tasks.NewQueue(o.Queue)
	if err != nil {
		return fmt.Errorf("jobs: %w", err)
	}
	nodes, err := sim.LoadNodes(o.Nodes)
	if err != nil {
		return fmt.Errorf("jobs: nodes: %w", err)
	}
	trace, err := sim.LoadTasks(o.Trace)
	if err != nil {
		return fmt.Errorf("jobs: trace: %w", err)
	}
	model, err := sim.TypicalShapes(trace, o.Coverage)
	if err != nil {
		return fmt.Errorf("jobs: %s: %w", o.Trace, err)
	}
	c, err := sim.NewCluster(nodes, model)
	if err != nil {
		return fmt.Errorf("jobs: %s: %w", o.Nodes, err)
	}
	if err := c.SetTieOrder(sim.SeededTieOrder(len(nodes), o.Seed)); err != nil {
		return err
	}
	_, _, capGPU := c.Capacity()
	work, err := tasks.NewWorkload(trace, capGPU, tasks.WorkloadConfig{Load: o.Load, Seed: o.Seed, Cap: o.Cap, Count: o.Count, Duration: o.Duration})
	if err != nil {
		return fmt.Errorf("jobs: %s: %w", o.Trace, err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	cfg := tasks.Config{Warmup: o.Warmup, Seed: o.Seed}
	if o.Series != "" {
		cfg.SeriesStep = o.SeriesStep
	}
	var res *tasks.Result
	if o.Log == "" {
		res, err = tasks.Run(c, placer, queue, work.Arrivals, cfg, nil)
	} else {
		res, err = runLogged(c, placer, queue, work, cfg, *o)
	}
	if err != nil {
		return fmt.Errorf("jobs: %w", err)
	}
	if o.Series != "" {
		f, err := atomicfile.Create(o.Series, 0o644)
		if err != nil {
			return fmt.Errorf("jobs: series: %w", err)
		}
		defer f.Abort()
		if err := tasks.WriteSeries(f, res.Series); err != nil {
			return fmt.Errorf("jobs: series %s: %w", o.Series, err)
		}
		if err := f.Commit(); err != nil {
			return fmt.Errorf("jobs: series: %w", err)
		}
	}
	s := summariseOpenb(*o, work, res)
	s.WallSeconds = time.Since(began).Seconds()
	if o.JSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	}
	return printOpenb(stdout, s)
}

// runLogged runs with a version-2 decision log written under a temporary name.
func runLogged(c *sim.Cluster, placer sim.Placer, q tasks.Queue, work *tasks.Workload, cfg tasks.Config, o openbJobsOptions) (*tasks.Result, error) {
	f, err := atomicfile.Create(o.Log, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Abort()
	h := sim.NewLogHeader(c, map[string]string{"protocol": "openb-timed", "policy": placer.Name(), "queue": o.Queue,
		"seed": strconv.FormatUint(o.Seed, 10), "nodes": o.Nodes, "pods": o.Trace, "load": fmtFloat(o.Load),
		"cap_s": fmtFloat(o.Cap), "tasks": strconv.Itoa(len(work.Arrivals))})
	h.Version = sim.LogVersionTimed
	lw, err := sim.NewLogWriter(f, h)
	if err != nil {
		return nil, err
	}
	res, err := tasks.Run(c, placer, q, work.Arrivals, cfg, lw)
	if err != nil {
		return nil, err
	}
	if err := lw.Flush(); err != nil {
		return nil, err
	}
	return res, f.Commit()
}

func fmtFloat(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

func summariseOpenb(o openbJobsOptions, w *tasks.Workload, r *tasks.Result) openbJobsSummary {
	jct, delays := r.Completion(), r.Delays()
	s := openbJobsSummary{Policy: o.Policy, Queue: o.Queue, Seed: o.Seed, Load: o.Load, OfferedLoad: w.OfferedLoad,
		CapS: o.Cap, Capped: w.Capped, WarmupS: o.Warmup, Arrived: len(w.Arrivals), Rejected: r.Rejected,
		TraceSamples: w.Samples, TracePending: w.Pending, Jobs: jct.Tasks, AvgJCT: jct.Mean, JCTP50: jct.P50,
		JCTP95: jct.P95, JCTP99: jct.P99, Makespan: r.Makespan, Utilization: r.Utilization,
		AllocMean: r.AllocGPUMeanPct, FragMean: r.FragGPUMean, DelayMean: delays["all"].Mean, DelayP95: delays["all"].P95,
		GPUDelayMean: delays[tasks.ClassGPU].Mean, GPUDelayP95: delays[tasks.ClassGPU].P95, DelayByKind: delays,
		Events: r.Events, Log: o.Log, Series: o.Series, JCT: map[int]float64{}}
	for _, i := range r.Measured() {
		s.JCT[i] = r.CompletionTime(i)
	}
	return s
}

func printOpenb(w io.Writer, s openbJobsSummary) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	capNote := "none"
	if s.CapS > 0 {
		capNote = fmt.Sprintf("%.0f s (%d of %d arrivals cut)", s.CapS, s.Capped, s.Arrived)
	}
	fmt.Fprintf(tw, "policy\t%s, queue %s, seed %d\n", s.Policy, s.Queue, s.Seed)
	fmt.Fprintf(tw, "load\t%g asked, %.3f offered; run-time cap %s\n", s.Load, s.OfferedLoad, capNote)
	fmt.Fprintf(tw, "tasks\t%d arrived, %d measured after %.0f s warm-up, %d rejected (fit no node)\n", s.Arrived, s.Jobs, s.WarmupS, s.Rejected)
	fmt.Fprintf(tw, "GPU allocation\t%.2f%% mean over the window, utilization %.3f, fragment %.1f GPUs\n", s.AllocMean, s.Utilization, s.FragMean)
	fmt.Fprintf(tw, "completion time\tmean %.0f s, p50 %.0f, p95 %.0f, p99 %.0f; makespan %.0f s\n", s.AvgJCT, s.JCTP50, s.JCTP95, s.JCTP99, s.Makespan)
	for _, k := range []string{"all", tasks.ClassGPU, tasks.ClassShare, tasks.ClassOneGPU, tasks.ClassMultiGPU, tasks.ClassCPU} {
		d := s.DelayByKind[k]
		fmt.Fprintf(tw, "queueing delay %s\tmean %.1f s, p95 %.1f s (%d tasks)\n", k, d.Mean, d.P95, d.Tasks)
	}
	fmt.Fprintf(tw, "wall\t%.2f s, %d events\n", s.WallSeconds, s.Events)
	return tw.Flush()
}

// openbPlacers resolves the openb timed world's placer names: heuristics and lookahead:K,H
// through tasks.NewPlacer, a placement checkpoint (ckpt:DIR, or MODEL@ALIAS pulled from the
// registry) through nn, as eval resolves it. cleanup removes the pulled versions.
func openbPlacers(cfg config.Config, log *slog.Logger) (resolve func(string) (policy.Placer, error), cleanup func()) {
	learned, cleanup := policyResolver(cfg, log, nil)
	return func(name string) (policy.Placer, error) {
		if !isLearnedPolicy(name) {
			return tasks.NewPlacer(name)
		}
		ref, err := eval.ParsePolicyRef(name)
		if err != nil {
			return nil, err
		}
		f, err := learned(ref)
		if err != nil {
			return nil, err
		}
		return eval.LearnedPlacer(name, f)
	}, cleanup
}
