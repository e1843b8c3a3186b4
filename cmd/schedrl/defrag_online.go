package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/schedrl/schedrl/defrag/online"
	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/internal/atomicfile"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/internal/manifestkind"
	"github.com/schedrl/schedrl/nn"
	"github.com/schedrl/schedrl/pipeline"
	"github.com/schedrl/schedrl/sim"
	"github.com/schedrl/schedrl/tasks"
)

// defragOnlineOptions is `schedrl defrag online`: the openb timed-task world with an online
// defragmenter (a named method, or a defrag checkpoint) on a trigger and a budget.
type defragOnlineOptions struct {
	Nodes, Pods string
	Load        float64 // offered load of the Poisson arrivals
	Seed        uint64
	// Duration ends the arrivals (seconds); Warmup is the unmeasured start; Cap cuts run times.
	Duration, Warmup, Cap float64
	Method                string // "none" or an online.Methods name
	Model                 string // a defrag checkpoint directory, or MODEL@ALIAS in the registry, instead of Method
	Device                string // where the model runs
	Placer, Queue         string
	Registry              config.RegistryConfig // where MODEL@ALIAS resolves
	Online                online.Config
	// Explicit names the trigger keys given on the command line (every, budget, cap-per-hour,
	// util-threshold); under the periodic trigger the others take online.PeriodicConfig's
	// values for the cluster's size.
	Explicit map[string]bool
	// SampleNodes, when > 0, runs on a seeded sample of that many nodes of Nodes
	// (online.SubCluster; DRR's 64-node clusters).
	SampleNodes int
	// Burst jobs of 8 GPUs arrive at one seeded instant of the measured window and run
	// BurstRunTime seconds (the readiness probe; 0: none).
	Burst        int
	BurstRunTime float64
	// Pooled measures the idealised bound instead of a method: the same arrivals on one pool of
	// the cluster's GPUs, where a task starts whenever the cluster's free GPUs suffice
	// (tasks.RunPooled).
	Pooled bool
	// Demos, when set, runs Method and writes each invocation as a migration log in this
	// directory (online.Demos) instead of printing the summary.
	Demos      string
	Force      bool   // replace an earlier run's --demos set
	Series     string // time-series CSV to write ("" none), every SeriesStep seconds
	SeriesStep float64
	JSON       bool
	Out        io.Writer
	Err        io.Writer // progress (simulated time) goes here; nil: stderr
}

// defaultDefragOnlineOptions are the command's own defaults and the built-in defrag_online
// section, where the timeline's horizon, warm-up and cap and the trigger, budget and downtime
// come from (loading the config replaces them with the effective section's).
func defaultDefragOnlineOptions() defragOnlineOptions {
	o := defragOnlineOptions{Nodes: "data/openb/openb_node_list_gpu_node.csv", Method: "none", Device: "cpu",
		Placer: "fgd", Queue: "backfill", SeriesStep: 60, BurstRunTime: 3600}
	o.useSection(config.Default().DefragOnline)
	return o
}

// sectionFlags are the flags that override a key of the defrag_online section.
var sectionFlags = map[string]func(s *config.DefragOnlineConfig, o *defragOnlineOptions){
	"duration":         func(s *config.DefragOnlineConfig, o *defragOnlineOptions) { s.Duration = o.Duration },
	"warmup":           func(s *config.DefragOnlineConfig, o *defragOnlineOptions) { s.Warmup = o.Warmup },
	"cap":              func(s *config.DefragOnlineConfig, o *defragOnlineOptions) { s.Cap = o.Cap },
	"every":            func(s *config.DefragOnlineConfig, o *defragOnlineOptions) { s.Every = o.Online.Every },
	"head-wait":        func(s *config.DefragOnlineConfig, o *defragOnlineOptions) { s.HeadWait = o.Online.HeadWait },
	"budget":           func(s *config.DefragOnlineConfig, o *defragOnlineOptions) { s.Budget = o.Online.Budget },
	"cap-per-hour":     func(s *config.DefragOnlineConfig, o *defragOnlineOptions) { s.CapPerHour = o.Online.CapPerHour },
	"downtime-base":    func(s *config.DefragOnlineConfig, o *defragOnlineOptions) { s.DowntimeBase = o.Online.DowntimeBase },
	"downtime-per-gpu": func(s *config.DefragOnlineConfig, o *defragOnlineOptions) { s.DowntimePerGPU = o.Online.DowntimePerGPU },
}

// fromConfig starts the options from the loaded defrag_online section, the flags the user set
// overriding its keys (precedence flag > environment > --config file > built-in defaults).
func (o *defragOnlineOptions) fromConfig(s config.DefragOnlineConfig, f *pflag.FlagSet) {
	for name, set := range sectionFlags {
		if f.Changed(name) {
			set(&s, o)
		}
	}
	o.useSection(s)
}

// useSection takes a defrag_online section's horizon, warm-up, run-time cap, trigger
// period, head wait, budget, cap per hour and downtime; the trigger kind and the utilisation
// threshold are the command's own.
func (o *defragOnlineOptions) useSection(s config.DefragOnlineConfig) {
	o.Duration, o.Warmup, o.Cap = s.Duration, s.Warmup, s.Cap
	c := online.ConfigOf(s)
	c.Trigger, c.UtilThreshold = o.Online.Trigger, o.Online.UtilThreshold
	o.Online = c
}

// section is the options as a defrag_online section, so that the section's own validation
// checks them; the keys the command does not read (loads, expert, shaping, held-out seeds)
// keep their built-in values.
func (o *defragOnlineOptions) section() config.DefragOnlineConfig {
	s := config.Default().DefragOnline
	s.Duration, s.Warmup, s.Cap = o.Duration, o.Warmup, o.Cap
	s.Every, s.HeadWait, s.Budget, s.CapPerHour = o.Online.Every, o.Online.HeadWait, o.Online.Budget, o.Online.CapPerHour
	s.DowntimeBase, s.DowntimePerGPU = o.Online.DowntimeBase, o.Online.DowntimePerGPU
	return s
}

// defragOnlineSummary is the printed result; delays are of the tasks arrived after the warm-up.
type defragOnlineSummary struct {
	Method            string                 `json:"method"`
	Load              float64                `json:"load"`
	OfferedLoad       float64                `json:"offered_load"`
	Seed              uint64                 `json:"seed"`
	Placer            string                 `json:"placer"`
	Nodes             int                    `json:"nodes"`
	Tasks             int                    `json:"tasks"`
	FragRatioMean     float64                `json:"frag_ratio_mean_pct"`
	FreeGPUsMean      float64                `json:"free_gpus_mean"`
	FreeGPUsMin       int                    `json:"free_gpus_min"`
	FreeNodes8Mean    float64                `json:"free_8gpu_nodes_mean"`
	FreeNodes8Min     int                    `json:"free_8gpu_nodes_min"`
	BurstAt           float64                `json:"burst_at_s,omitempty"`
	BurstDelay        *tasks.Stats           `json:"burst_queue_delay,omitempty"`
	GPUDelayMean      float64                `json:"gpu_queue_delay_mean_s"`
	GPUDelayP95       float64                `json:"gpu_queue_delay_p95_s"`
	WholeGPUDelayMean float64                `json:"whole_gpu_queue_delay_mean_s"`
	WholeGPUDelayP95  float64                `json:"whole_gpu_queue_delay_p95_s"`
	DelayByKind       map[string]tasks.Stats `json:"queue_delay_by_kind"`
	AllocMean         float64                `json:"alloc_gpu_mean_pct"`
	FragMean          float64                `json:"frag_gpu_mean"`
	PendingGPUHours   float64                `json:"pending_gpu_hours"`
	CompletionMean    float64                `json:"completion_mean_s"`
	CompletionP95     float64                `json:"completion_p95_s"`
	Migrations        int                    `json:"migrations"`
	MigrationsPer1000 float64                `json:"migrations_per_1000_tasks"`
	Downtime          float64                `json:"downtime_s"`
	Invocations       int                    `json:"invocations"`
	SkippedMigrations int                    `json:"skipped_migrations"`
	Online            online.Config          `json:"online"`
	WallSeconds       float64                `json:"wall_seconds"`
}

// newDefragOnlineCmd is `defrag online`; runF runs the filled options.
func newDefragOnlineCmd(runF func(context.Context, *defragOnlineOptions) error) *cobra.Command {
	o := defaultDefragOnlineOptions()
	cmd := &cobra.Command{
		Use:   "online --pods CSV --load RHO --seed N (--method NAME | --model CKPT)",
		Short: "Run the timed openb world with an online defragmenter on a trigger and budget; print queueing, allocation, migrations",
		Long: "Poisson arrivals at offered load --load from the pod list, FIFO with backfill, placement by --placer; every\n" +
			"--every seconds, when the queue head has waited --head-wait seconds, the method plans at most --budget\n" +
			"migrations (and --cap-per-hour in any hour) on a snapshot; each migration costs its task\n" +
			"--downtime-base + --downtime-per-gpu x its GPUs of downtime. Methods: none, " + strings.Join(online.Methods(), ", ") + ".\n" +
			"The horizon, warm-up, cap, trigger, budget and downtime start from the config's defrag_online section\n" +
			"(built-in defaults, --config FILE, SCHEDRL_DEFRAG_ONLINE_*, --set defrag_online.KEY=V); their flags override it.",
		Example: "  schedrl defrag online --pods data/openb/openb_pod_list_default.csv --load 1.1 --seed 101 --method make-room --json\n" +
			"  schedrl defrag online --config configs/defrag-online.yaml --pods data/openb/openb_pod_list_default.csv --load 1.0 --seed 101 --method greedy",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("model") && cmd.Flags().Changed("method") {
				return fmt.Errorf("defrag online: give --method or --model, not both")
			}
			cfg, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			o.fromConfig(cfg.DefragOnline, cmd.Flags())
			o.Registry = cfg.Registry
			if store, _ := cmd.Flags().GetString("store"); store != "" {
				o.Registry.Store = store
			}
			o.Explicit = map[string]bool{}
			for _, k := range []string{"every", "budget", "cap-per-hour", "util-threshold", "head-wait"} {
				o.Explicit[k] = cmd.Flags().Changed(k)
			}
			if !cmd.Flags().Changed("nodes") {
				o.Nodes = config.RepoFile(o.Nodes)
			}
			o.Out = cmd.OutOrStdout()
			return runF(cmd.Context(), &o)
		},
	}
	f := cmd.Flags()
	config.AddFlags(f, "")
	f.String("store", "", "registry store URL for --model MODEL@ALIAS (default: registry.store)")
	f.StringVar(&o.Nodes, "nodes", o.Nodes, "openb node list CSV")
	f.StringVar(&o.Pods, "pods", "", "openb pod list CSV (the tasks and their run times)")
	f.Float64Var(&o.Load, "load", 0, "offered load (GPU-time demanded per second over GPU capacity), in (0, 10]")
	f.Uint64Var(&o.Seed, "seed", 0, "seed of arrivals, tie order and the methods' draws")
	f.Float64Var(&o.Duration, "duration", o.Duration, "arrivals end at this time (seconds; defrag_online.duration_s)")
	f.Float64Var(&o.Warmup, "warmup", o.Warmup, "unmeasured start (seconds; defrag_online.warmup_s)")
	f.Float64Var(&o.Cap, "cap", o.Cap, "run-time cap (seconds, 0 none; defrag_online.cap_s)")
	f.StringVar(&o.Method, "method", o.Method, "defragmentation method: none, "+strings.Join(online.Methods(), ", ")+", or oracle (repack everything at each check, no cost, no budget)")
	f.StringVar(&o.Model, "model", "", "defrag checkpoint directory (pretrain/finetune output), or MODEL@ALIAS|MODEL@N in the registry, planning at each invocation instead of --method; a placement checkpoint (DRR's, e.g. drr@champion) runs the whole DRR policy: it places every start and "+online.DRRRescheduler+" reschedules")
	f.StringVar(&o.Device, "device", o.Device, "device of --model (cpu, cuda, auto)")
	f.StringVar(&o.Placer, "placer", o.Placer, "placement policy: "+strings.Join(tasks.PlacerNames(), ", ")+", or a placement checkpoint ckpt:DIR or MODEL@ALIAS")
	f.StringVar(&o.Queue, "queue", o.Queue, "queue discipline: "+strings.Join(tasks.Queues(), ", "))
	f.StringVar(&o.Online.Trigger, "trigger", online.TriggerQueue, "when a check acts: queue (the head waited --head-wait) or periodic (DRR's: every --every seconds whatever the queue; unset --every, --budget, --cap-per-hour, --util-threshold take DRR's 3600 s, 5 an hour per 64 nodes, 0.5)")
	f.Float64Var(&o.Online.Every, "every", o.Online.Every, "seconds between trigger checks (Δt; defrag_online.every_s)")
	f.Float64Var(&o.Online.UtilThreshold, "util-threshold", 0, "move tasks only off nodes whose GPU allocation is under this share (0: any node)")
	f.IntVar(&o.SampleNodes, "sample-nodes", 0, "run on a seeded sample of this many nodes of --nodes (0: all)")
	f.IntVar(&o.Burst, "burst", 0, "inject this many 8-GPU jobs at one seeded instant of the measured window and report their wait (0: none)")
	f.Float64Var(&o.BurstRunTime, "burst-runtime", o.BurstRunTime, "run time of a burst job (seconds)")
	f.Float64Var(&o.Online.HeadWait, "head-wait", o.Online.HeadWait, "act only when the queue head has waited this long (T, seconds, 0: every check; defrag_online.head_wait_s)")
	f.IntVar(&o.Online.Budget, "budget", o.Online.Budget, "migrations per invocation (defrag_online.budget)")
	f.IntVar(&o.Online.CapPerHour, "cap-per-hour", o.Online.CapPerHour, "migrations started in any hour (defrag_online.cap_per_hour)")
	f.Float64Var(&o.Online.DowntimeBase, "downtime-base", o.Online.DowntimeBase, "downtime a of a migration (seconds; defrag_online.downtime_base_s)")
	f.Float64Var(&o.Online.DowntimePerGPU, "downtime-per-gpu", o.Online.DowntimePerGPU, "downtime b per GPU of the moved task (seconds; defrag_online.downtime_per_gpu_s)")
	f.BoolVar(&o.Pooled, "pooled", false, "measure the bound instead: one pool of the cluster's GPUs, a task starts whenever the free GPUs suffice (node boundaries ignored)")
	f.StringVar(&o.Demos, "demos", "", "write each invocation of --method as a migration log in this directory (BC demonstrations for datasets build --env defrag) instead of printing")
	f.StringVar(&o.Series, "series", "", "time-series CSV to write (allocation, fragment, running, waiting)")
	f.BoolVar(&o.Force, "force", false, "replace the --demos logs of an earlier run of the same pods, load and seed")
	markOutput(f, "demos", string(manifestkind.LogSet))
	markOutput(f, "series", fileOutput)
	f.Float64Var(&o.SeriesStep, "series-step", o.SeriesStep, "seconds between series samples")
	f.BoolVar(&o.JSON, "json", false, "print JSON")
	return cmd
}

// validate refuses out-of-range keys before any work.
// maxTriggerChecks bounds a run's trigger checks (duration / every): a check every second of a
// four-month run.
const maxTriggerChecks = 10_000_000

func (o *defragOnlineOptions) validate() error {
	switch {
	case o.Pods == "":
		return fmt.Errorf("pods: a pod list CSV is required")
	case !(o.Load > 0 && o.Load <= 10):
		return fmt.Errorf("load: must be in (0, 10], got %v", o.Load)
	}
	if err := o.section().Validate(); err != nil {
		return err
	}
	switch {
	case o.Pooled && (o.Model != "" || !strings.EqualFold(o.Method, "none")):
		return fmt.Errorf("pooled: a measurement without a defragmenter: give no --method or --model")
	case o.Demos != "" && (o.Model != "" || strings.EqualFold(o.Method, "none")):
		return fmt.Errorf("demos: demonstrations record a --method (make-room, greedy, ...)")
	case !(o.SeriesStep > 0):
		return fmt.Errorf("series-step: must be > 0 seconds, got %v", o.SeriesStep)
	case o.SampleNodes < 0:
		return fmt.Errorf("sample-nodes: must be >= 0, got %d", o.SampleNodes)
	case o.Burst < 0:
		return fmt.Errorf("burst: must be >= 0 jobs, got %d", o.Burst)
	case o.Burst > 0 && !(o.BurstRunTime > 0):
		return fmt.Errorf("burst-runtime: must be > 0 seconds, got %v", o.BurstRunTime)
	case o.Online.Trigger == online.TriggerPeriodic && o.Explicit["head-wait"]:
		return fmt.Errorf("head-wait: the periodic trigger acts whatever the queue; give --head-wait only with --trigger queue")
	case strings.EqualFold(o.Method, online.OracleName) && (o.Model != "" || o.Demos != ""):
		return fmt.Errorf("method: oracle repacks by itself: no --model or --demos with it")
	case o.Online.Every >= online.MinEvery && o.Duration/o.Online.Every > maxTriggerChecks:
		return fmt.Errorf("every: %g s over duration %g s is %.3g trigger checks, at most %d", o.Online.Every, o.Duration, o.Duration/o.Online.Every, maxTriggerChecks)
	}
	return o.Online.Validate()
}

// planner is the method, or the checkpoint's network behind the online planner interface.
func (o *defragOnlineOptions) planner(ctx context.Context) (online.Planner, error) {
	if o.Model != "" {
		if p, ok, err := o.drrPolicy(ctx); ok || err != nil {
			return p, err
		}
		dev, err := nn.Device(config.DeviceConfig{Name: o.Device})
		if err != nil {
			return nil, err
		}
		dir := o.Model
		if _, statErr := os.Stat(dir); statErr != nil && strings.Contains(dir, "@") {
			if dir, _, err = pullModel(ctx, o.Registry, o.Model, slog.Default()); err != nil {
				return nil, err
			}
			defer os.RemoveAll(filepath.Dir(dir))
		}
		p, err := nn.LoadDefragPolicy(dir, dev)
		if err != nil {
			return nil, err
		}
		return online.FromDefrag(p, o.demoOptions()), nil
	}
	if strings.EqualFold(o.Method, "none") || strings.EqualFold(o.Method, online.OracleName) {
		return nil, nil
	}
	return online.NewPlanner(o.Method)
}

// timeline reads the node and pod lists into the run's timeline.
func (o *defragOnlineOptions) timeline() (online.Timeline, error) {
	nodes, err := sim.LoadNodes(o.Nodes)
	if err != nil {
		return online.Timeline{}, fmt.Errorf("nodes: %w", err)
	}
	nodes = online.SubCluster(nodes, o.SampleNodes, o.Seed)
	trace, err := sim.LoadTasks(o.Pods)
	if err != nil {
		return online.Timeline{}, fmt.Errorf("pods: %w", err)
	}
	model, err := sim.TypicalShapes(trace, 0.95)
	if err != nil {
		return online.Timeline{}, fmt.Errorf("%s: %w", o.Pods, err)
	}
	return online.Timeline{Nodes: nodes, Trace: trace, Model: model, Load: o.Load, Seed: o.Seed, Duration: o.Duration,
		Warmup: o.Warmup, Cap: o.Cap, Placer: o.Placer, Queue: o.Queue, Burst: o.Burst, BurstRunTime: o.BurstRunTime}, nil
}

// periodic fills the periodic trigger's keys the command line left unset with DRR's, scaled
// to a cluster of nodes nodes (online.PeriodicConfig).
func (o *defragOnlineOptions) periodic(nodes int) {
	if o.Online.Trigger != online.TriggerPeriodic {
		return
	}
	every := online.DRREvery
	if o.Explicit["every"] {
		every = o.Online.Every
	}
	d := online.PeriodicConfig(nodes, every)
	o.Online.Every, o.Online.HeadWait = every, 0
	if !o.Explicit["budget"] {
		o.Online.Budget = d.Budget
	}
	if !o.Explicit["cap-per-hour"] {
		o.Online.CapPerHour = d.CapPerHour
	}
	if !o.Explicit["util-threshold"] {
		o.Online.UtilThreshold = d.UtilThreshold
	}
}

// demoOptions are the defrag reward weights the demonstration logs' plans are measured with.
func (o *defragOnlineOptions) demoOptions() env.DefragOptions {
	d := config.Default().Defrag
	return env.DefragOptions{RewardFragment: d.RewardFragment, RewardPending: d.RewardPending, MigrationCost: d.MigrationCost}
}

// runDefragOnline builds the cluster and workload, runs them with the defragmenter and prints
// the summary.
func runDefragOnline(ctx context.Context, o *defragOnlineOptions) error {
	began := time.Now()
	if err := o.validate(); err != nil {
		return fmt.Errorf("defrag online: %w", err)
	}
	planner, err := o.planner(ctx)
	if err != nil {
		return fmt.Errorf("defrag online: method: %w", err)
	}
	tl, err := o.timeline()
	if err != nil {
		return fmt.Errorf("defrag online: %w", err)
	}
	cfg := config.Default()
	cfg.Registry, cfg.Device = o.Registry, config.DeviceConfig{Name: o.Device}
	resolve, cleanup := openbPlacers(cfg, slog.Default())
	defer cleanup()
	tl.Resolve = resolve
	o.periodic(len(tl.Nodes))
	if err := o.Online.Validate(); err != nil {
		return fmt.Errorf("defrag online: %w", err)
	}
	w, err := tl.Build()
	if err != nil {
		return fmt.Errorf("defrag online: %s: %w", o.Pods, err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if o.Pooled {
		res, err := tasks.RunPooled(tl.Nodes, w.Workload.Arrivals, o.Warmup)
		if err != nil {
			return fmt.Errorf("defrag online: %w", err)
		}
		return o.print(summariseOnline(o, len(tl.Nodes), w.Workload, res, nil), began)
	}
	if o.Demos != "" {
		prefix := fmt.Sprintf("%s-load%g-seed%d", strings.TrimSuffix(filepath.Base(o.Pods), ".csv"), o.Load, o.Seed)
		set, err := atomicfile.BeginSet(o.Demos, prefix+"-", "defrag online --demos, "+prefix, o.Force)
		if err != nil {
			return fmt.Errorf("defrag online: --demos: %w", err)
		}
		logs, err := online.Demos(tl, o.Online, o.Method, o.demoOptions(), o.Demos, prefix)
		if err != nil {
			return fmt.Errorf("defrag online: demos: %w", err)
		}
		if err := set.Commit(); err != nil {
			return fmt.Errorf("defrag online: %w", err)
		}
		fmt.Fprintf(o.Out, "%d invocations of %s logged in %s\n", len(logs), o.Method, o.Demos)
		return nil
	}
	var d *online.Defragmenter
	var hook tasks.Defragmenter
	switch {
	case planner != nil:
		if d, err = online.New(o.Online, planner, w.Placer, o.Seed); err != nil {
			return fmt.Errorf("defrag online: %w", err)
		}
		hook = d
	case strings.EqualFold(o.Method, online.OracleName):
		if hook, err = online.NewOracle(o.Online.Every, o.Seed); err != nil {
			return fmt.Errorf("defrag online: %w", err)
		}
	}
	if hook != nil {
		hook = o.progress(hook)
	}
	res, err := w.Run(tl, hook, o.SeriesStep)
	if err != nil {
		return fmt.Errorf("defrag online: %w", err)
	}
	if o.Series != "" {
		f, err := atomicfile.Create(o.Series, 0o644)
		if err != nil {
			return fmt.Errorf("defrag online: series: %w", err)
		}
		defer f.Abort()
		if err := tasks.WriteSeries(f, res.Series); err != nil {
			return fmt.Errorf("defrag online: series %s: %w", o.Series, err)
		}
		if err := f.Commit(); err != nil {
			return fmt.Errorf("defrag online: series: %w", err)
		}
	}
	return o.print(summariseOnline(o, len(tl.Nodes), w.Workload, res, d), began)
}

// print writes the summary, as JSON with --json.
func (o *defragOnlineOptions) print(s defragOnlineSummary, began time.Time) error {
	s.WallSeconds = time.Since(began).Seconds()
	if o.JSON {
		enc := json.NewEncoder(o.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	}
	tw := tabwriter.NewWriter(o.Out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "method\t%s, load %g (%.3f offered), seed %d, %d tasks measured\n", s.Method, s.Load, s.OfferedLoad, s.Seed, s.Tasks)
	fmt.Fprintf(tw, "queueing delay, GPU tasks\tmean %.1f s, p95 %.1f s\n", s.GPUDelayMean, s.GPUDelayP95)
	fmt.Fprintf(tw, "queueing delay, whole-GPU tasks\tmean %.1f s, p95 %.1f s\n", s.WholeGPUDelayMean, s.WholeGPUDelayP95)
	fmt.Fprintf(tw, "GPU allocation\t%.2f%% mean; pending %.1f GPU-hours\n", s.AllocMean, s.PendingGPUHours)
	fmt.Fprintf(tw, "fragmentation rate\t%.2f%% mean (fragment of the idle GPU capacity)\n", s.FragRatioMean)
	fmt.Fprintf(tw, "readiness\t%.1f free whole GPUs, %.1f free 8-GPU nodes (means)\n", s.FreeGPUsMean, s.FreeNodes8Mean)
	fmt.Fprintf(tw, "migrations\t%d (%.1f per 1,000 tasks), downtime %.0f s, %d invocations\n", s.Migrations, s.MigrationsPer1000, s.Downtime, s.Invocations)
	fmt.Fprintf(tw, "wall\t%.2f s\n", s.WallSeconds)
	return tw.Flush()
}

func summariseOnline(o *defragOnlineOptions, nodes int, w *tasks.Workload, r *tasks.Result, d *online.Defragmenter) defragOnlineSummary {
	delays, jct := r.Delays(), r.Completion()
	whole := r.DelayStats(tasks.WholeGPU)
	method := o.Method
	switch {
	case o.Model != "":
		method = "model:" + o.Model
	case o.Pooled:
		method = "pooled"
	}
	s := defragOnlineSummary{Method: method, Load: o.Load, OfferedLoad: w.OfferedLoad, Seed: o.Seed, Placer: o.Placer,
		Nodes: nodes, Tasks: delays["all"].Tasks, FragRatioMean: r.FragRatioMeanPct,
		GPUDelayMean: delays[tasks.ClassGPU].Mean, GPUDelayP95: delays[tasks.ClassGPU].P95,
		WholeGPUDelayMean: whole.Mean, WholeGPUDelayP95: whole.P95, DelayByKind: delays,
		AllocMean: r.AllocGPUMeanPct, FragMean: r.FragGPUMean, PendingGPUHours: r.PendingGPUHours,
		CompletionMean: jct.Mean, CompletionP95: jct.P95, Migrations: r.Migrations, Downtime: r.DowntimeS, Online: o.Online}
	if s.Tasks > 0 {
		s.MigrationsPer1000 = 1000 * float64(r.Migrations) / float64(len(w.Arrivals))
	}
	if d != nil {
		s.Invocations, s.SkippedMigrations = d.Invocations, d.Skipped
	}
	s.FreeGPUsMean, s.FreeGPUsMin, s.FreeNodes8Mean, s.FreeNodes8Min = readiness(r)
	if o.Burst > 0 {
		b := r.BurstDelays()
		s.BurstAt, s.BurstDelay = online.BurstTime(o.Seed, o.Warmup, o.Duration), &b
	}
	return s
}

// readiness is the mean and least of the free whole GPUs and of the whole free 8-GPU nodes
// over the series samples in the measured window [warm-up, last arrival].
func readiness(r *tasks.Result) (gpusMean float64, gpusMin int, nodesMean float64, nodesMin int) {
	n := 0
	for _, p := range r.Series {
		if p.Time < r.Warmup || p.Time > r.LastArrival {
			continue
		}
		if n == 0 || p.FreeGPUs < gpusMin {
			gpusMin = p.FreeGPUs
		}
		if n == 0 || p.FreeNodes8 < nodesMin {
			nodesMin = p.FreeNodes8
		}
		gpusMean += float64(p.FreeGPUs)
		nodesMean += float64(p.FreeNodes8)
		n++
	}
	if n > 0 {
		gpusMean /= float64(n)
		nodesMean /= float64(n)
	}
	return gpusMean, gpusMin, nodesMean, nodesMin
}

// progress wraps a run's defragmenter so that each invocation reports the simulated time
// reached on stderr: a day's timeline takes minutes, and --json keeps stdout for the result.
// It counts up to --duration, the last arrival; the drain after it is not known in advance.
func (o *defragOnlineOptions) progress(d tasks.Defragmenter) tasks.Defragmenter {
	w, terminal := o.Err, false
	if w == nil {
		w, terminal = os.Stderr, isTerminal(os.Stderr)
	}
	p := pipeline.NewProgress(w, terminal, "defrag online")
	p.Start(int64(o.Duration), "simulated s")
	return &progressHook{Defragmenter: d, p: p, total: int64(o.Duration)}
}

type progressHook struct {
	tasks.Defragmenter
	p     pipeline.Progress
	done  int64 // simulated seconds reported
	total int64
}

func (h *progressHook) Invoke(v *tasks.View) (float64, error) {
	if now := min(int64(v.Now()), h.total); now > h.done {
		h.p.Add(now - h.done)
		h.done = now
	}
	return h.Defragmenter.Invoke(v)
}
