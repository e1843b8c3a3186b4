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
	)
	cmd := &cobra.Command{
		Use:   "eval",
		Short: "Compare policies on held-out workloads: metrics.json, curves.csv, plots and a report",
		Long: "Runs every policy on every trace x seed in the ATC'23 arrival protocol, in parallel,\n" +
			"and writes metrics.json, curves.csv, PNG figures, report.md and report.html to --out.\n" +
			"Policies: heuristic names (random, dotprod, clustering, packing, bestfit, fgd), ckpt:DIR,\n" +
			"or registry references MODEL@VERSION|ALIAS. Traces: openb short names (default,\n" +
			"gpushare40, ...) or CSV paths. Flags override the config's eval section.",
		Example: "  schedrl eval --policies fgd,bestfit,ckpt:runs/bc --traces default,gpushare40 --seeds 49-51 --out runs/eval",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			ec := &cfg.Eval
			f := cmd.Flags()
			set := map[string]func(){
				"policies":    func() { ec.Policies = splitList(policies) },
				"traces":      func() { ec.Traces = splitList(traces) },
				"seeds":       func() { ec.Seeds = seeds },
				"tune":        func() { ec.Tune = tune },
				"out":         func() { ec.Out = out },
				"nodes":       func() { ec.Nodes = nodes },
				"traces-dir":  func() { ec.TracesDir = tdir },
				"parallelism": func() { ec.Parallelism = parallelism },
				"no-paper":    func() { ec.PaperOverlay = !noPaper },
				"baseline":    func() { ec.Baseline = baseline },
			}
			for name, apply := range set {
				if f.Changed(name) {
					apply()
				}
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
	m, err := eval.Run(ctx, ec, eval.Options{Resolve: resolve, Force: opts.Force,
		Log: slog.Default(), Progress: isTerminal(os.Stderr)})
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
			if pulled == "" {
				var err error
				if pulled, err = os.MkdirTemp("", "schedrl-eval-pull-"); err != nil {
					return nil, fmt.Errorf("policy %q: %w", ref.Raw, err)
				}
			}
			dest := filepath.Join(pulled, ref.Name+"@"+ref.Tag)
			if err := pullVersion(cfg, ref, dest, log); err != nil {
				return nil, err
			}
			return loadCheckpoint(ref, dest)
		}
		return eval.Heuristics(ref)
	}
	return resolve, cleanup
}
