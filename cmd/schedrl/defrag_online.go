package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/schedrl/schedrl/defrag/online"
	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/internal/atomicfile"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/nn"
	"github.com/schedrl/schedrl/policy"
	"github.com/schedrl/schedrl/registry"
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
	// Pooled measures the idealised bound instead of a method: the same arrivals on one pool of
	// the cluster's GPUs, where a task starts whenever the cluster's free GPUs suffice
	// (tasks.RunPooled).
	Pooled bool
	// Demos, when set, runs Method and writes each invocation as a migration log in this
	// directory (online.Demos) instead of printing the summary.
	Demos      string
	Series     string // time-series CSV to write ("" none), every SeriesStep seconds
	SeriesStep float64
	JSON       bool
	Out        io.Writer
}

func defaultDefragOnlineOptions() defragOnlineOptions {
	return defragOnlineOptions{Nodes: "data/openb/openb_node_list_gpu_node.csv", Duration: 86400, Warmup: 4 * 3600,
		Cap: tasks.DefaultCap, Method: "none", Device: "cpu", Placer: "fgd", Queue: "backfill",
		Online: online.DefaultConfig(), SeriesStep: 60}
}

// defragOnlineSummary is the printed result; delays are of the tasks arrived after the warm-up.
type defragOnlineSummary struct {
	Method            string                 `json:"method"`
	Load              float64                `json:"load"`
	OfferedLoad       float64                `json:"offered_load"`
	Seed              uint64                 `json:"seed"`
	Tasks             int                    `json:"tasks"`
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
			"--downtime-base + --downtime-per-gpu x its GPUs of downtime. Methods: none, " + strings.Join(online.Methods(), ", ") + ".",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("model") && cmd.Flags().Changed("method") {
				return fmt.Errorf("defrag online: give --method or --model, not both")
			}
			cfg, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			o.Registry = cfg.Registry
			if store, _ := cmd.Flags().GetString("store"); store != "" {
				o.Registry.Store = store
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
	f.Float64Var(&o.Duration, "duration", o.Duration, "arrivals end at this time (seconds)")
	f.Float64Var(&o.Warmup, "warmup", o.Warmup, "unmeasured start (seconds)")
	f.Float64Var(&o.Cap, "cap", o.Cap, "run-time cap (seconds; 0 none)")
	f.StringVar(&o.Method, "method", o.Method, "defragmentation method: none, "+strings.Join(online.Methods(), ", "))
	f.StringVar(&o.Model, "model", "", "defrag checkpoint directory (pretrain/finetune output), or MODEL@ALIAS|MODEL@N in the registry, planning at each invocation instead of --method")
	f.StringVar(&o.Device, "device", o.Device, "device of --model (cpu, cuda, auto)")
	f.StringVar(&o.Placer, "placer", o.Placer, "placement policy: "+strings.Join(policy.Placers(), ", "))
	f.StringVar(&o.Queue, "queue", o.Queue, "queue discipline: "+strings.Join(tasks.Queues(), ", "))
	f.Float64Var(&o.Online.Every, "every", o.Online.Every, "seconds between trigger checks (Δt)")
	f.Float64Var(&o.Online.HeadWait, "head-wait", o.Online.HeadWait, "act only when the queue head has waited this long (T, seconds; 0: every check)")
	f.IntVar(&o.Online.Budget, "budget", o.Online.Budget, "migrations per invocation")
	f.IntVar(&o.Online.CapPerHour, "cap-per-hour", o.Online.CapPerHour, "migrations started in any hour")
	f.Float64Var(&o.Online.DowntimeBase, "downtime-base", o.Online.DowntimeBase, "downtime a of a migration (seconds)")
	f.Float64Var(&o.Online.DowntimePerGPU, "downtime-per-gpu", o.Online.DowntimePerGPU, "downtime b per GPU of the moved task (seconds)")
	f.BoolVar(&o.Pooled, "pooled", false, "measure the bound instead: one pool of the cluster's GPUs, a task starts whenever the free GPUs suffice (node boundaries ignored)")
	f.StringVar(&o.Demos, "demos", "", "write each invocation of --method as a migration log in this directory (BC demonstrations for datasets build --env defrag) instead of printing")
	f.StringVar(&o.Series, "series", "", "time-series CSV to write (allocation, fragment, running, waiting)")
	f.Float64Var(&o.SeriesStep, "series-step", o.SeriesStep, "seconds between series samples")
	f.BoolVar(&o.JSON, "json", false, "print JSON")
	return cmd
}

// validate refuses out-of-range keys before any work.
func (o *defragOnlineOptions) validate() error {
	switch {
	case o.Pods == "":
		return fmt.Errorf("pods: a pod list CSV is required")
	case !(o.Load > 0 && o.Load <= 10):
		return fmt.Errorf("load: must be in (0, 10], got %v", o.Load)
	case !(o.Duration > 0) || math.IsInf(o.Duration, 0):
		return fmt.Errorf("duration: must be > 0 seconds, got %v", o.Duration)
	case !(o.Warmup >= 0 && o.Warmup < o.Duration):
		return fmt.Errorf("warmup: must be in [0, duration %v), got %v", o.Duration, o.Warmup)
	case o.Cap < 0:
		return fmt.Errorf("cap: must be >= 0 seconds, got %v", o.Cap)
	case o.Pooled && (o.Model != "" || !strings.EqualFold(o.Method, "none")):
		return fmt.Errorf("pooled: a measurement without a defragmenter: give no --method or --model")
	case o.Demos != "" && (o.Model != "" || strings.EqualFold(o.Method, "none")):
		return fmt.Errorf("demos: demonstrations record a --method (make-room, greedy, ...)")
	case o.Series != "" && !(o.SeriesStep > 0):
		return fmt.Errorf("series-step: must be > 0 seconds, got %v", o.SeriesStep)
	}
	return o.Online.Validate()
}

// planner is the method, or the checkpoint's network behind the online planner interface.
func (o *defragOnlineOptions) planner(ctx context.Context) (online.Planner, error) {
	if o.Model != "" {
		dev, err := nn.Device(config.DeviceConfig{Name: o.Device})
		if err != nil {
			return nil, err
		}
		dir := o.Model
		if _, statErr := os.Stat(dir); statErr != nil && strings.Contains(dir, "@") {
			if dir, err = o.pull(ctx); err != nil {
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
	if strings.EqualFold(o.Method, "none") {
		return nil, nil
	}
	return online.NewPlanner(o.Method)
}

// pull downloads the registry version o.Model names into a temporary directory.
func (o *defragOnlineOptions) pull(ctx context.Context) (string, error) {
	r, err := registry.Open(o.Registry, slog.Default())
	if err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp("", "schedrl-defrag-online-")
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute) // a checkpoint is a few MB
	defer cancel()
	dir := filepath.Join(tmp, "model")
	if _, err := r.Pull(ctx, o.Model, dir, false); err != nil {
		os.RemoveAll(tmp)
		return "", withModelHint(o.Model, fmt.Errorf("%s: %w", o.Model, err))
	}
	return dir, nil
}

// timeline reads the node and pod lists into the run's timeline.
func (o *defragOnlineOptions) timeline() (online.Timeline, error) {
	nodes, err := sim.LoadNodes(o.Nodes)
	if err != nil {
		return online.Timeline{}, fmt.Errorf("nodes: %w", err)
	}
	trace, err := sim.LoadTasks(o.Pods)
	if err != nil {
		return online.Timeline{}, fmt.Errorf("pods: %w", err)
	}
	model, err := sim.TypicalShapes(trace, 0.95)
	if err != nil {
		return online.Timeline{}, fmt.Errorf("%s: %w", o.Pods, err)
	}
	return online.Timeline{Nodes: nodes, Trace: trace, Model: model, Load: o.Load, Seed: o.Seed, Duration: o.Duration,
		Warmup: o.Warmup, Cap: o.Cap, Placer: o.Placer, Queue: o.Queue}, nil
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
		return o.print(summariseOnline(o, w.Workload, res, nil), began)
	}
	if o.Demos != "" {
		logs, err := online.Demos(tl, o.Online, o.Method, o.demoOptions(), o.Demos, fmt.Sprintf("%s-load%g-seed%d", strings.TrimSuffix(filepath.Base(o.Pods), ".csv"), o.Load, o.Seed))
		if err != nil {
			return fmt.Errorf("defrag online: demos: %w", err)
		}
		fmt.Fprintf(o.Out, "%d invocations of %s logged in %s\n", len(logs), o.Method, o.Demos)
		return nil
	}
	var seriesStep float64
	if o.Series != "" {
		seriesStep = o.SeriesStep
	}
	var d *online.Defragmenter
	var hook tasks.Defragmenter
	if planner != nil {
		if d, err = online.New(o.Online, planner, w.Placer, o.Seed); err != nil {
			return fmt.Errorf("defrag online: %w", err)
		}
		hook = d
	}
	res, err := w.Run(tl, hook, seriesStep)
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
	return o.print(summariseOnline(o, w.Workload, res, d), began)
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
	fmt.Fprintf(tw, "migrations\t%d (%.1f per 1,000 tasks), downtime %.0f s, %d invocations\n", s.Migrations, s.MigrationsPer1000, s.Downtime, s.Invocations)
	fmt.Fprintf(tw, "wall\t%.2f s\n", s.WallSeconds)
	return tw.Flush()
}

func summariseOnline(o *defragOnlineOptions, w *tasks.Workload, r *tasks.Result, d *online.Defragmenter) defragOnlineSummary {
	delays, jct := r.Delays(), r.Completion()
	whole := r.DelayStats(tasks.WholeGPU)
	method := o.Method
	switch {
	case o.Model != "":
		method = "model:" + o.Model
	case o.Pooled:
		method = "pooled"
	}
	s := defragOnlineSummary{Method: method, Load: o.Load, OfferedLoad: w.OfferedLoad, Seed: o.Seed, Tasks: delays["all"].Tasks,
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
	return s
}
