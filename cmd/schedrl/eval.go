package main

import (
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/schedrl/schedrl/eval"
	"github.com/schedrl/schedrl/internal/config"
)

func init() {
	var (
		policies, traces        []string
		seeds, out, nodes, tdir string
		tune                    float64
		parallelism             int
		noPaper, force          bool
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
			path, _ := cmd.Flags().GetString(config.ConfigFlag)
			cfg, err := config.Load(path, cmd.Flags())
			if err != nil {
				return err
			}
			ec := cfg.Eval
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
			}
			for name, apply := range set {
				if f.Changed(name) {
					apply()
				}
			}
			if err := ec.Validate(); err != nil {
				return fmt.Errorf("eval: %w", err)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			m, err := eval.Run(ctx, ec, eval.Options{Resolve: resolvePolicy, Force: force,
				Log: slog.Default(), Progress: isTerminal(os.Stderr)})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "report: %s/report.html (%d runs in %.1f s)\n",
				ec.Out, len(m.Results)*len(m.Seeds), m.WallSeconds)
			return nil
		},
	}
	f := cmd.Flags()
	config.AddFlags(f, "")
	f.StringSliceVar(&policies, "policies", nil, "policies to compare (comma-separated)")
	f.StringSliceVar(&traces, "traces", nil, "traces: openb short names or CSV paths (comma-separated)")
	f.StringVar(&seeds, "seeds", "", "held-out workload seeds, e.g. 49-53 or 49,50,51")
	f.Float64Var(&tune, "tune", 0, "workload tuning ratio (default 1.3)")
	f.StringVar(&out, "out", "", "report directory")
	f.StringVar(&nodes, "nodes", "", "node list CSV")
	f.StringVar(&tdir, "traces-dir", "", "directory of openb_pod_list_NAME.csv for short trace names")
	f.IntVar(&parallelism, "parallelism", 0, "concurrent runs (default: all CPUs)")
	f.BoolVar(&noPaper, "no-paper", false, "do not overlay the paper's published curves")
	f.BoolVar(&force, "force", false, "replace an existing report directory")
	rootCmd.AddCommand(cmd)
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

// resolvePolicy adds checkpoints and registry references to eval's heuristics.
func resolvePolicy(ref eval.PolicyRef) (eval.PolicyFactory, error) {
	switch ref.Kind {
	case eval.Checkpoint:
		return nil, fmt.Errorf("policy %q: checkpoint policies need package nn's placement adapter (pretrain issue), which this build does not have yet", ref.Raw)
	case eval.Registry:
		return nil, fmt.Errorf("policy %q: registry references need package registry's pull (registry issue), which this build does not have yet", ref.Raw)
	}
	return eval.Heuristics(ref)
}
