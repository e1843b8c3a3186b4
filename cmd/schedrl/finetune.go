package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/schedrl/schedrl/finetune"
	"github.com/schedrl/schedrl/internal/config"
)

func init() {
	var from, out string
	var totalSteps int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "finetune",
		Short: "PPO in the placement simulator from a behaviour-cloned checkpoint (or from scratch)",
		Long: "Fine-tunes the checkpoint --from (\"none\": a fresh network, same budget) with PPO in the\n" +
			"placement environment over the config's episode mix, evaluating greedily on the held-out\n" +
			"seeds. --out becomes the fine-tuned checkpoint; it also holds the run record\n" +
			"(metrics.jsonl) and resumable checkpoints: rerunning the same command after a crash or\n" +
			"kill continues from the last one. Flags override the config's finetune section.",
		Example: "  schedrl finetune --config configs/default.yaml --from runs/pretrain --out runs/finetune\n" +
			"  schedrl finetune --from none --out runs/finetune-scratch",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			path, _ := cmd.Flags().GetString(config.ConfigFlag)
			cfg, err := config.Load(path, cmd.Flags())
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
			if err := cfg.Finetune.Validate(); err != nil {
				return fmt.Errorf("finetune.%w", err)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			var o finetune.Options
			if isTerminal(os.Stderr) {
				o.Bar = os.Stderr
			}
			res, err := finetune.Run(ctx, cfg, o)
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(res)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "fine-tuned %s: held-out GPU allocation %.2f%% -> %.2f%% after %d env steps (%.0f steps/s, %.0f s)\n",
				res.Dir, res.StartMean, res.FinalMean, res.EnvSteps, res.StepsPerSecond, res.Seconds)
			return nil
		},
	}
	cmd.Flags().StringVar(&from, "from", "", `pretrained checkpoint directory, or "none" (default: finetune.from)`)
	cmd.Flags().StringVar(&out, "out", "", "run directory, the fine-tuned checkpoint (default: finetune.out)")
	cmd.Flags().IntVar(&totalSteps, "total-steps", 0, "budget in environment steps (default: finetune.total_steps)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	config.AddFlags(cmd.Flags(), "")
	rootCmd.AddCommand(cmd)
}
