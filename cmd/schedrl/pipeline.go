package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/schedrl/schedrl/finetune"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/pipeline"
	"github.com/schedrl/schedrl/pipeline/stages"
	"github.com/schedrl/schedrl/pretrain"
)

func newPipelineCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "pipeline",
		Short: "Run the stage graph (logs -> datasets -> pretrain -> finetune -> eval -> publish) with caching",
	}
	cmd.AddCommand(newPipelineRunCmd(nil), newPipelineStatusCmd(nil))
	return cmd
}

// pipelineIO is what both pipeline subcommands get: the output, the config and its file.
type pipelineIO struct {
	Out        io.Writer
	Config     config.Config
	ConfigFile string
}

func pipelineRunE[O any](opts *O, pio *pipelineIO, runF func(context.Context, *O) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, _ []string) error {
		cfg, path, err := loadPipelineConfig(cmd)
		if err != nil {
			return err
		}
		pio.Out, pio.Config, pio.ConfigFile = cmd.OutOrStdout(), cfg, path
		return runF(cmd.Context(), opts)
	}
}

type pipelineRunOptions struct {
	pipelineIO
	Force []string
	From  string
}

func newPipelineRunCmd(runF func(context.Context, *pipelineRunOptions) error) *cobra.Command {
	if runF == nil {
		runF = runPipelineRun
	}
	opts := &pipelineRunOptions{}
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run every stage whose key has no complete output; skip the rest",
		Long: "Runs the stages listed in pipeline.stages in order. A stage's key hashes its config section,\n" +
			"its inputs' content and the code revision; a stage whose key has a complete output is skipped.\n" +
			"An interrupted run resumes: finished stages are skipped, finetune continues from its last checkpoint.",
		Args: cobra.NoArgs,
		RunE: pipelineRunE(opts, &opts.pipelineIO, runF),
	}
	config.AddFlags(cmd.Flags(), "configs/default.yaml")
	cmd.Flags().StringArrayVar(&opts.Force, "force", nil, "rerun this stage even when cached (repeatable)")
	cmd.Flags().StringVar(&opts.From, "from", "", "rerun this stage and every later one")
	return cmd
}

func runPipelineRun(ctx context.Context, opts *pipelineRunOptions) error {
	cfg := opts.Config
	p, rev, cleanup, err := buildPipeline(cfg)
	if err != nil {
		return err
	}
	defer cleanup()
	rec, runErr := p.Run(ctx, pipeline.Options{
		Dir: cfg.Pipeline.Dir, CodeRevision: rev, Force: opts.Force, From: opts.From,
		ConfigFile: opts.ConfigFile, Log: slog.Default(), Terminal: isTerminal(os.Stderr),
	})
	if rec != nil {
		fmt.Fprintln(opts.Out)
		rec.WriteSummary(opts.Out)
		fmt.Fprintf(opts.Out, "run record: %s\n", pipeline.RecordPath(cfg.Pipeline.Dir, rec.RunID))
	}
	return runErr
}

type pipelineStatusOptions struct {
	pipelineIO
	RunID string
}

func newPipelineStatusCmd(runF func(context.Context, *pipelineStatusOptions) error) *cobra.Command {
	if runF == nil {
		runF = runPipelineStatus
	}
	opts := &pipelineStatusOptions{}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the last run's record and which stages the current config would skip or run",
		Args:  cobra.NoArgs,
		RunE:  pipelineRunE(opts, &opts.pipelineIO, runF),
	}
	config.AddFlags(cmd.Flags(), "configs/default.yaml")
	cmd.Flags().StringVar(&opts.RunID, "run", "", "show this run id instead of the latest")
	return cmd
}

func runPipelineStatus(_ context.Context, opts *pipelineStatusOptions) error {
	cfg, out := opts.Config, opts.Out
	if rec, err := pipeline.LoadRecord(cfg.Pipeline.Dir, opts.RunID); err == nil {
		fmt.Fprintf(out, "last run %s (%s, code %s):\n", rec.RunID, rec.ConfigFile, rec.CodeRevision)
		rec.WriteSummary(out)
	} else if opts.RunID != "" {
		return err
	} else {
		fmt.Fprintf(out, "no run recorded under %s yet\n", cfg.Pipeline.Dir)
	}
	p, rev, cleanup, err := buildPipeline(cfg)
	if err != nil {
		return err
	}
	defer cleanup()
	plan, err := p.Plan(pipeline.Options{Dir: cfg.Pipeline.Dir, CodeRevision: rev, Log: slog.Default()})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\nwith the current config and code (%s):\n", rev)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STAGE\tNEXT RUN\tKEY\tWHY")
	for _, e := range plan {
		key := e.Key
		if key == "" {
			key = "-"
		} else {
			key = key[:12]
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", e.Stage, e.State, key, e.Reason)
	}
	return tw.Flush()
}

// buildPipeline is the stage graph of cfg and the code revision its keys use; cleanup
// removes the registry versions eval's policy resolvers pulled.
func buildPipeline(cfg config.Config) (*pipeline.Pipeline, string, func(), error) {
	resolve, cleanupPlacers := policyResolver(cfg, slog.Default(), nil)
	learned, cleanupLearned := learnedResolvers(cfg, slog.Default())
	cleanup := func() { cleanupPlacers(); cleanupLearned() }
	p, err := stages.Build(cfg, stages.Deps{ResolvePolicy: resolve, Learned: learned,
		Pretrain: pretrainStage, Finetune: finetuneStage})
	if err == nil {
		var rev string
		if rev, err = pipeline.CodeRevision(); err == nil {
			return p, rev, cleanup, nil
		}
	}
	cleanup()
	return nil, "", nil, err
}

func loadPipelineConfig(cmd *cobra.Command) (config.Config, string, error) {
	path, _ := cmd.Flags().GetString(config.ConfigFlag)
	if !cmd.Flags().Changed(config.ConfigFlag) {
		path = config.RepoFile(path) // configs/default.yaml, from another folder too
	}
	cfg, err := config.Load(path, cmd.Flags())
	return cfg, path, err
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// pretrainStage runs behaviour cloning for the pipeline; pretrain resumes from the state in
// its output directory by itself.
func pretrainStage(ctx context.Context, cfg config.Config, env pipeline.Env) (pipeline.Result, error) {
	rev, err := pipeline.CodeRevision()
	if err != nil {
		return pipeline.Result{}, err
	}
	o := pretrain.CloneOptions{CodeRevision: rev, Log: env.Log}
	if env.Terminal {
		o.Bar = os.Stderr
	}
	sum, err := pretrain.Clone(ctx, cfg, o)
	if err != nil {
		return pipeline.Result{}, err
	}
	return pipeline.Result{Metric: &pipeline.Metric{Name: sum.Metric, Value: sum.Value}, Note: sum.Note}, nil
}

// finetuneStage runs PPO for the pipeline; finetune resumes from the newest checkpoint in
// its output directory by itself.
func finetuneStage(ctx context.Context, cfg config.Config, env pipeline.Env) (pipeline.Result, error) {
	var bar io.Writer
	if env.Terminal {
		bar = os.Stderr
	}
	res, err := finetune.Run(ctx, cfg, finetune.Options{Bar: bar, Log: env.Log})
	if err != nil {
		return pipeline.Result{}, err
	}
	if !res.Complete {
		return pipeline.Result{}, fmt.Errorf("stopped after %d updates, before its budget", res.Updates)
	}
	sum := res.Summary
	return pipeline.Result{Metric: &pipeline.Metric{Name: sum.Metric, Value: sum.Value}, Note: sum.Note}, nil
}
