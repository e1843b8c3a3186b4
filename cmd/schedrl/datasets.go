package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/schedrl/schedrl/datasets"
	"github.com/schedrl/schedrl/family"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/internal/manifestkind"
)

func newDatasetsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "datasets",
		Short: "Turn decision logs into Parquet transition datasets and inspect them",
	}
	cmd.AddCommand(newDatasetsBuildCmd(nil), newDatasetsInspectCmd(nil))
	return cmd
}

// datasetsBuildOptions: the config, its datasets section with the flags applied.
type datasetsBuildOptions struct {
	Config config.Config
}

func newDatasetsBuildCmd(runF func(context.Context, *datasetsBuildOptions) error) *cobra.Command {
	if runF == nil {
		runF = runDatasetsBuild
	}
	opts := &datasetsBuildOptions{}
	var (
		logs, envName, out, nodes string
		valFraction               float64
		force                     bool
		workers, shardRows        int
	)
	cmd := &cobra.Command{
		Use:   "build",
		Short: "Replay decision logs through the simulator into train/val Parquet shards + manifest.json",
		Long: "Replays every log matching --logs (JSON lines, docs/decision-log.md), checks each logged\n" +
			"decision against the simulator, and writes DIR/train/*.parquet, DIR/val/*.parquet and\n" +
			"DIR/manifest.json through a temporary directory (see docs/datasets.md). Flags override the\n" +
			"config's datasets section.",
		Example: "  schedrl datasets build --logs 'runs/logs/*.jsonl' --env placement --out runs/ds --val-fraction 0.2",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			dc := &cfg.Datasets
			f := cmd.Flags()
			for name, apply := range map[string]func(){
				"logs": func() { dc.Logs = logs }, "env": func() { dc.Env = envName }, "out": func() { dc.Out = out },
				"val-fraction": func() { dc.ValFraction = valFraction }, "force": func() { dc.Force = force },
				"workers": func() { dc.Workers = workers }, "shard-rows": func() { dc.ShardRows = shardRows },
				"nodes": func() { dc.Nodes = nodes },
			} {
				if f.Changed(name) {
					apply()
				}
			}
			opts.Config = cfg
			return runF(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&logs, "logs", "", "glob of decision logs, e.g. 'runs/logs/*.jsonl'")
	f.StringVar(&envName, "env", config.Default().Datasets.Env, "environment: placement, defrag (migration logs of defrag plan --log / defrag demos; rewards from the defrag section), or maifs (logs of schedrl jobs fungible --log; validation = the logs of maifs.val_seeds)")
	f.StringVar(&out, "out", "", "dataset directory to write")
	f.Float64Var(&valFraction, "val-fraction", 0.1, "share of episodes (logs) for validation")
	f.BoolVar(&force, "force", false, "replace an existing output directory")
	f.StringVar(&nodes, "nodes", "", "node list CSV every log header must match (optional)")
	intFlag(f, &workers, "workers", 0, 0, "logs replayed in parallel (0: one per CPU)")
	intFlag(f, &shardRows, "shard-rows", 100000, 1, "most rows per Parquet shard")
	markOutput(f, "out", string(manifestkind.Dataset))
	config.AddFlags(f, "")
	return cmd
}

func runDatasetsBuild(ctx context.Context, opts *datasetsBuildOptions) error {
	cfg := opts.Config
	dc := cfg.Datasets
	if err := dc.Validate(); err != nil {
		return fmt.Errorf("datasets: %w", err)
	}
	if dc.Logs == "" || dc.Out == "" {
		return fmt.Errorf("datasets build: --logs and --out (or datasets.logs and datasets.out) are required")
	}
	f, err := family.Lookup("datasets.env", dc.Env)
	if err == nil && f.Dataset == nil {
		err = fmt.Errorf("datasets.env: %q: the family builds no dataset", dc.Env)
	}
	if err != nil {
		return fmt.Errorf("datasets: %w", err)
	}
	if _, err := f.Dataset.Build(ctx, cfg, slog.Default()); err != nil {
		return fmt.Errorf("datasets: %w", err)
	}
	return nil
}

type datasetsInspectOptions struct {
	Out  io.Writer
	Dir  string
	JSON bool
}

func newDatasetsInspectCmd(runF func(context.Context, *datasetsInspectOptions) error) *cobra.Command {
	if runF == nil {
		runF = runDatasetsInspect
	}
	opts := &datasetsInspectOptions{}
	cmd := &cobra.Command{
		Use:   "inspect DIR",
		Short: "Verify a dataset and print its counts, schema, reward and action statistics",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Out, opts.Dir = cmd.OutOrStdout(), args[0]
			return runF(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the report as JSON")
	return cmd
}

func runDatasetsInspect(_ context.Context, opts *datasetsInspectOptions) error {
	rep, err := datasets.Inspect(opts.Dir)
	if err != nil {
		return err
	}
	if opts.JSON {
		enc := json.NewEncoder(opts.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	rep.Print(opts.Out)
	return nil
}
