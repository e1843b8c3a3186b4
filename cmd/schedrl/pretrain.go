package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/schedrl/schedrl/eval"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/internal/manifestkind"
	"github.com/schedrl/schedrl/pipeline"
	"github.com/schedrl/schedrl/pretrain"
	"github.com/schedrl/schedrl/sim"
)

type pretrainOptions struct {
	Out    io.Writer
	Config config.Config // pretrain section with the flags applied
	JSON   bool
}

func newPretrainCmd(runF func(context.Context, *pretrainOptions) error) *cobra.Command {
	if runF == nil {
		runF = runPretrain
	}
	opts := &pretrainOptions{}
	var dataset, valDataset, out string
	var epochs int
	cmd := &cobra.Command{
		Use:   "pretrain",
		Short: "Behaviour-clone the expert from a dataset: the checkpoint PPO starts from",
		Long: "Trains the entity network (network section) on a dataset's expert decisions: masked\n" +
			"cross-entropy against the logged node plus value regression on return-to-go; Adam with the\n" +
			"configured schedule, clipping and early stopping on validation agreement. --out becomes a\n" +
			"checkpoint (model.ot + manifest.json, the best validation epoch) with run.json, the\n" +
			"per-epoch record; rerunning the same command after an interruption resumes from its saved\n" +
			"state. Flags override the config's pretrain section.",
		Example: "  schedrl pretrain --config configs/default.yaml\n" +
			"  schedrl pretrain --dataset runs/ds --out runs/pretrain",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			pc := &cfg.Pretrain
			f := cmd.Flags()
			for name, apply := range map[string]func(){
				"dataset": func() { pc.Dataset = dataset }, "data": func() { pc.Dataset = dataset }, "val-dataset": func() { pc.ValDataset = valDataset },
				"out": func() { pc.Out = out }, "epochs": func() { pc.Epochs = epochs },
			} {
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
	f.StringVar(&dataset, "dataset", "", "training dataset directory, placement or defrag (default: pretrain.dataset)")
	f.StringVar(&dataset, "data", "", "same as --dataset")
	f.StringVar(&valDataset, "val-dataset", "", "validation dataset directory (default: pretrain.val_dataset, else the dataset's val split)")
	f.StringVar(&out, "out", "", "checkpoint directory (default: pretrain.out)")
	intFlag(f, &epochs, "epochs", 0, 1, "epochs (default: pretrain.epochs)")
	markOutput(f, "out", string(manifestkind.Checkpoint))
	f.BoolVar(&opts.JSON, "json", false, "print the result as JSON")
	return cmd
}

func runPretrain(ctx context.Context, opts *pretrainOptions) error {
	cfg := opts.Config
	rev, err := pipeline.CodeRevision()
	if err != nil {
		slog.Warn("pretrain: code revision unknown", "err", err)
	}
	o := pretrain.Options{Pretrain: cfg.Pretrain, Network: cfg.Network, Device: cfg.Device, Seed: cfg.Seed,
		CodeRevision: rev, Log: slog.Default()}
	if isTerminal(os.Stderr) {
		o.Bar = os.Stderr
	}
	res, err := pretrain.Run(ctx, o)
	if err != nil {
		return err
	}
	if opts.JSON {
		return json.NewEncoder(opts.Out).Encode(res)
	}
	fmt.Fprintf(opts.Out, "pretrained %s: validation agreement %.2f%% (exact node %.2f%%) at epoch %d; %d steps in %.0f s; %s\n",
		res.Dir, 100*res.Best.ValAgreement, 100*res.Best.ValExact, res.Best.Epoch, res.Steps, res.Elapsed.Seconds(), res.StopReason)
	for _, st := range res.Best.ValStages {
		fmt.Fprintf(opts.Out, "  stage %d: validation agreement %.2f%% (exact %.2f%%) over %d decisions\n",
			st.Stage, 100*st.Agreement, 100*st.Exact, st.Samples)
	}
	return nil
}

// simPlacer resolves sim's --policy exactly as eval resolves its policies: a heuristic name,
// ckpt:DIR (a checkpoint, e.g. pretrain's output) or a registry reference.
func simPlacer(cfg config.Config, name string) (func() (sim.Placer, error), func(), error) {
	ref, err := eval.ParsePolicyRef(name)
	if err != nil {
		return nil, nil, err
	}
	resolve, cleanup := policyResolver(cfg, slog.Default(), nil)
	factory, err := resolve(ref)
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	if _, err := factory(); err != nil {
		cleanup()
		return nil, nil, err
	}
	return factory, cleanup, nil
}
