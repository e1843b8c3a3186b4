package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/schedrl/schedrl/eval"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/nn"
	"github.com/schedrl/schedrl/registry"
	"github.com/schedrl/schedrl/sim"
)

type evalOptions struct {
	Out    io.Writer
	Config config.Config // eval section with the flags applied
	Force  bool
}

func newEvalCmd(runF func(context.Context, *evalOptions) error) *cobra.Command {
	if runF == nil {
		runF = runEval
	}
	opts := &evalOptions{}
	var (
		policies, traces        []string
		seeds, out, nodes, tdir string
		baseline                string
		tune                    float64
		parallelism             int
		noPaper                 bool
		timed                   config.TimedEvalConfig
		generate                []string
	)
	cmd := &cobra.Command{
		Use:   "eval",
		Short: "Compare policies on held-out workloads: metrics.json, curves.csv, plots and a report",
		Long: "Runs every policy on every trace x seed in the ATC'23 arrival protocol, in parallel,\n" +
			"and writes metrics.json, curves.csv, PNG figures, report.md and report.html to --out.\n" +
			"Policies: heuristic names (random, dotprod, clustering, packing, bestfit, fgd), ckpt:DIR,\n" +
			"or registry references MODEL@VERSION|ALIAS. Traces: openb short names (default,\n" +
			"gpushare40, ...) or CSV paths. Flags override the config's eval section.\n" +
			"--timed jobs|fungible|tasks evaluates on timed workloads instead (docs/eval.md, \"Timed workloads\"):\n" +
			"policies are then what `schedrl jobs --policy` takes (tasks: placers), traces Gavel trace files\n" +
			"(tasks: openb pod lists) and --generate jobs=N,lam=S[,multigpu]; JCT CDFs, allocation and queue length over time.",
		Example: "  schedrl eval --policies fgd,bestfit,ckpt:runs/bc --traces default,gpushare40 --seeds 49-51 --out runs/eval\n" +
			"  schedrl eval --timed jobs --policies fifo,srtf,max_min_fairness_perf --generate jobs=300,lam=900,multigpu --cluster 8:8:8 --seeds 0-2 --out runs/eval-jobs",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			ec := &cfg.Eval
			f := cmd.Flags()
			set := map[string]func(){
				"policies":     func() { ec.Policies = splitList(policies) },
				"traces":       func() { ec.Traces = splitList(traces) },
				"seeds":        func() { ec.Seeds = seeds },
				"tune":         func() { ec.Tune = tune },
				"out":          func() { ec.Out = out },
				"nodes":        func() { ec.Nodes = nodes },
				"traces-dir":   func() { ec.TracesDir = tdir },
				"parallelism":  func() { ec.Parallelism = parallelism },
				"no-paper":     func() { ec.PaperOverlay = !noPaper },
				"baseline":     func() { ec.Baseline = baseline },
				"timed":        func() { ec.Timed.Kind = timed.Kind },
				"cluster":      func() { ec.Timed.Cluster = timed.Cluster },
				"servers-gpus": func() { ec.Timed.ServersGPUs = timed.ServersGPUs },
				"round":        func() { ec.Timed.Round = timed.Round },
				"load":         func() { ec.Timed.Load = timed.Load },
				"tasks":        func() { ec.Timed.Tasks = timed.Tasks },
				"cap":          func() { ec.Timed.Cap = timed.Cap },
				"warmup":       func() { ec.Timed.Warmup = timed.Warmup },
				"queue":        func() { ec.Timed.Queue = timed.Queue },
			}
			for name, apply := range set {
				if f.Changed(name) {
					apply()
				}
			}
			if f.Changed("generate") { // after --traces, or instead of the default traces
				if !f.Changed("traces") {
					ec.Traces = nil
				}
				ec.Traces = append(ec.Traces, generate...)
			}
			opts.Out, opts.Config = cmd.OutOrStdout(), cfg
			return runF(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	config.AddFlags(f, "")
	f.StringSliceVar(&policies, "policies", nil, "policies to compare (comma-separated)")
	f.StringSliceVar(&traces, "traces", nil, "traces: openb short names or CSV paths (comma-separated)")
	f.StringVar(&seeds, "seeds", "", "held-out workload seeds, e.g. 49-53 or 49,50,51")
	f.Float64Var(&tune, "tune", 0, "workload tuning ratio (default 1.3)")
	f.StringVar(&out, "out", "", "report directory")
	f.StringVar(&baseline, "baseline", "", "policy the others are compared with seed by seed (default: the first)")
	f.StringVar(&nodes, "nodes", "", "node list CSV")
	f.StringVar(&tdir, "traces-dir", "", "directory of openb_pod_list_NAME.csv for short trace names")
	intFlag(f, &parallelism, "parallelism", 0, 0, "concurrent runs (default: all CPUs)")
	markOutput(f, "out", "dir")
	f.BoolVar(&noPaper, "no-paper", false, "do not overlay the paper's published curves")
	f.BoolVar(&opts.Force, "force", false, "replace an existing report directory")
	f.StringVar(&timed.Kind, "timed", "", "evaluate on timed workloads of this world: "+strings.Join(config.TimedKinds, ", "))
	f.StringVar(&timed.Cluster, "cluster", "", "timed jobs, fungible: GPUs per type, V100:P100:K80 (default 36:36:36)")
	f.StringVar(&timed.ServersGPUs, "servers-gpus", "", "timed jobs: GPUs per server per type (V100:P100:K80); fungible: the server size in GPUs (default 8)")
	f.Float64Var(&timed.Round, "round", 0, "timed jobs, fungible: round length in seconds (default 360)")
	f.Float64Var(&timed.Load, "load", 0, "timed tasks: offered load of the Poisson resampling (default 1.0; 0: the trace's timestamps)")
	f.IntVar(&timed.Tasks, "tasks", 0, "timed tasks: number of arrivals (default 150000)")
	f.Float64Var(&timed.Cap, "cap", 0, "timed tasks: cut run times to this many seconds (default 14400; 0: none)")
	f.Float64Var(&timed.Warmup, "warmup", 0, "timed tasks: seconds from the start left out of the measures (default 14400)")
	f.StringVar(&timed.Queue, "queue", "", "timed tasks: queue discipline (default backfill)")
	f.StringArrayVar(&generate, "generate", nil, "timed jobs, fungible: a generated workload jobs=N,lam=S[,multigpu] (Gavel's mix, drawn per seed), added to --traces; repeatable")
	return cmd
}

func runEval(ctx context.Context, opts *evalOptions) error {
	cfg := opts.Config
	ec := cfg.Eval
	if err := ec.Validate(); err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	resolve, cleanup := policyResolver(cfg, slog.Default())
	defer cleanup()
	evalOpts := eval.Options{Resolve: resolve, Force: opts.Force, Log: slog.Default(), Progress: isTerminal(os.Stderr)}
	if ec.Timed.Kind != "" {
		m, err := eval.RunTimed(ctx, ec, evalOpts)
		if err != nil {
			return err
		}
		fmt.Fprintf(opts.Out, "report: %s/report.html (%d runs in %.1f s)\n", ec.Out, m.Runs(), m.WallSeconds)
		return nil
	}
	m, err := eval.Run(ctx, ec, evalOpts)
	if err != nil {
		return err
	}
	fmt.Fprintf(opts.Out, "report: %s/report.html (%d runs in %.1f s)\n",
		ec.Out, len(m.Results)*len(m.Seeds), m.WallSeconds)
	return nil
}

func splitList(xs []string) []string {
	var out []string
	for _, x := range xs {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// policyResolver resolves heuristics through eval, checkpoints through nn (each loaded once,
// its placers sharing the network) and registry references by pulling the version into a
// temporary directory, then loading it as a checkpoint. cleanup removes the pulled versions.
func policyResolver(cfg config.Config, log *slog.Logger) (resolve eval.Resolver, cleanup func()) {
	// Eval already runs one simulation per core; libtorch threads on top would only contend.
	if cfg.Device.Threads == 0 && cfg.Eval.Parallelism != 1 {
		cfg.Device.Threads = 1
	}
	var pulled string
	cleanup = func() {
		if pulled != "" {
			os.RemoveAll(pulled)
		}
	}
	loadCheckpoint := func(ref eval.PolicyRef, dir string) (eval.PolicyFactory, error) {
		dev, err := nn.Device(cfg.Device)
		if err != nil {
			return nil, fmt.Errorf("policy %q: %w", ref.Raw, err)
		}
		p, err := nn.LoadPolicy(dir, dev)
		if err != nil {
			return nil, fmt.Errorf("policy %q: %w", ref.Raw, err)
		}
		return func() (sim.Placer, error) { return p.NewPlacer(), nil }, nil
	}
	resolve = func(ref eval.PolicyRef) (eval.PolicyFactory, error) {
		switch ref.Kind {
		case eval.Checkpoint:
			return loadCheckpoint(ref, ref.Dir)
		case eval.Registry:
			reg, err := registry.Open(cfg.Registry, log)
			if err != nil {
				return nil, fmt.Errorf("policy %q: %w", ref.Raw, err)
			}
			if pulled == "" {
				if pulled, err = os.MkdirTemp("", "schedrl-eval-pull-"); err != nil {
					return nil, fmt.Errorf("policy %q: %w", ref.Raw, err)
				}
			}
			dest := filepath.Join(pulled, ref.Name+"@"+ref.Tag)
			ctx, cancel := context.WithTimeout(context.Background(), cfg.Registry.Deadline)
			defer cancel()
			if _, err := reg.Pull(ctx, ref.Raw, dest, true); err != nil {
				return nil, fmt.Errorf("policy %q: %w", ref.Raw, err)
			}
			return loadCheckpoint(ref, dest)
		}
		return eval.Heuristics(ref)
	}
	return resolve, cleanup
}
