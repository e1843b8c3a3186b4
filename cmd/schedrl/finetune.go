package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/schedrl/schedrl/finetune"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/internal/manifestkind"
)

type finetuneOptions struct {
	Out    io.Writer
	Config config.Config // finetune section with the flags applied
	JSON   bool
}

func newFinetuneCmd(runF func(context.Context, *finetuneOptions) error) *cobra.Command {
	if runF == nil {
		runF = runFinetune
	}
	opts := &finetuneOptions{}
	var from, out string
	var totalSteps int
	cmd := &cobra.Command{
		Use:   "finetune",
		Short: "PPO in the placement or defrag simulator from a behaviour-cloned checkpoint (or from scratch)",
		Long: "Fine-tunes the checkpoint --from (\"none\": a fresh network, same budget) with PPO in the\n" +
			"environment finetune.env (placement: arrival episodes; defrag: migration plans on fragmented\n" +
			"starting states) over the config's episode mix, evaluating greedily on the held-out\n" +
			"seeds. --out becomes the fine-tuned checkpoint; it also holds the run record\n" +
			"(metrics.jsonl) and resumable checkpoints: rerunning the same command after a crash or\n" +
			"kill continues from the last one. Flags override the config's finetune section.",
		Example: "  schedrl finetune --config configs/default.yaml --from runs/pretrain --out runs/finetune\n" +
			"  schedrl finetune --from none --out runs/finetune-scratch\n" +
			"  schedrl finetune --config configs/defrag.yaml --from runs/defrag-bc --out runs/defrag-ppo",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			f := cmd.Flags()
			if f.Changed("from") {
				cfg.Finetune.From = from
			}
			if f.Changed("out") {
				cfg.Finetune.Out = out
			}
			if f.Changed("total-steps") {
				cfg.Finetune.TotalSteps = totalSteps
			}
			opts.Out, opts.Config = cmd.OutOrStdout(), cfg
			return runF(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&from, "from", "", `pretrained checkpoint directory, or "none" (default: finetune.from)`)
	cmd.Flags().StringVar(&out, "out", "", "run directory, the fine-tuned checkpoint (default: finetune.out)")
	intFlag(cmd.Flags(), &totalSteps, "total-steps", 0, 1, "budget in environment steps (default: finetune.total_steps)")
	markOutput(cmd.Flags(), "out", string(manifestkind.Checkpoint))
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the result as JSON")
	config.AddFlags(cmd.Flags(), "")
	cmd.AddCommand(newFinetunePlotCmd(nil), newFinetuneWorkerCmd())
	return cmd
}

func runFinetune(ctx context.Context, opts *finetuneOptions) error {
	cfg := opts.Config
	if err := cfg.Finetune.Validate(); err != nil {
		return fmt.Errorf("finetune.%w", err)
	}
	var o finetune.Options
	if isTerminal(os.Stderr) {
		o.Bar = os.Stderr
	}
	res, err := finetune.Run(ctx, cfg, o)
	if err != nil {
		return err
	}
	w := opts.Out
	if opts.JSON {
		return json.NewEncoder(w).Encode(res)
	}
	for _, line := range res.Summary.Lines {
		fmt.Fprintln(w, line)
	}
	return nil
}

type finetunePlotOptions struct {
	Runs, Refs []string // LABEL=DIR, LABEL=PERCENT
	Out, Title string
}

func newFinetunePlotCmd(runF func(context.Context, *finetunePlotOptions) error) *cobra.Command {
	if runF == nil {
		runF = runFinetunePlot
	}
	opts := &finetunePlotOptions{}
	cmd := &cobra.Command{
		Use:   "plot [DIR...]",
		Short: "Plot held-out GPU allocation vs environment steps of finetune runs (PNG)",
		Long: "Plots each placement finetune run given as DIR (labelled by its folder name) or as\n" +
			"--run LABEL=DIR against environment steps, with --ref lines, to --out.",
		Example: "  schedrl finetune plot runs/finetune\n" +
			"  schedrl finetune plot --run warm=runs/finetune --run scratch=runs/finetune-scratch --ref fgd=95.44 --out warm-vs-scratch.png",
		RunE: func(cmd *cobra.Command, args []string) error {
			runs := make([]string, 0, len(args)+len(opts.Runs))
			for _, dir := range args {
				runs = append(runs, filepath.Base(filepath.Clean(dir))+"="+dir)
			}
			opts.Runs = append(runs, opts.Runs...)
			if len(opts.Runs) == 0 {
				return fmt.Errorf("finetune plot: name a run: DIR or --run LABEL=DIR")
			}
			return runF(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringArrayVar(&opts.Runs, "run", nil, "LABEL=DIR of a finetune run (repeatable; or give DIR as an argument)")
	cmd.Flags().StringArrayVar(&opts.Refs, "ref", nil, "LABEL=PERCENT reference line, e.g. fgd=95.44 (repeatable)")
	cmd.Flags().StringVar(&opts.Out, "out", "finetune.png", "PNG to write")
	markOutput(cmd.Flags(), "out", fileOutput)
	cmd.Flags().StringVar(&opts.Title, "title", "PPO fine-tuning: warm start vs from scratch", "plot title")
	return cmd
}

func runFinetunePlot(_ context.Context, opts *finetunePlotOptions) error {
	var curves []finetune.Curve
	for _, r := range opts.Runs {
		label, dir, ok := strings.Cut(r, "=")
		if !ok {
			return fmt.Errorf("--run %q: want LABEL=DIR", r)
		}
		c, err := finetune.ReadCurve(label, dir)
		if err != nil {
			return err
		}
		curves = append(curves, c)
	}
	var lines []finetune.Reference
	for _, r := range opts.Refs {
		label, v, ok := strings.Cut(r, "=")
		x, err := strconv.ParseFloat(v, 64)
		if !ok || err != nil {
			return fmt.Errorf("--ref %q: want LABEL=PERCENT", r)
		}
		lines = append(lines, finetune.Reference{Label: label, AllocPct: x})
	}
	return finetune.PlotCurves(opts.Out, opts.Title, curves, lines)
}
