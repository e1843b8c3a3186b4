package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/schedrl/schedrl/eval"
	"github.com/schedrl/schedrl/executor"
	"github.com/schedrl/schedrl/finetune"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/registry"
)

// newFinetuneWorkerCmd is what a rollout worker's pod runs (finetune.rollout_workers with
// the kubernetes executor, docs/distributed.md).
func newFinetuneWorkerCmd() *cobra.Command {
	var run, shard, part string
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Roll out for a finetune run's learner (what a rollout worker's pod runs)",
		Long: "Rolls out environment copies I, I+N, ... of the finetune run whose files are under the\n" +
			"store key --run, with each update's weights, until the learner stops it; the run's config\n" +
			"comes from the store, the store itself from this process's registry settings.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			own, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			sh, err := eval.ParseShard(shard)
			if err != nil {
				return fmt.Errorf("--shard: %w", err)
			}
			return runFinetuneWorker(cmd.Context(), own.Registry, run, sh, part)
		},
	}
	cmd.Flags().StringVar(&run, "run", "", "store key prefix of the learner's run (rollouts/<id>)")
	cmd.Flags().StringVar(&shard, "shard", "", "I/N: this worker's index and the number of workers")
	cmd.Flags().StringVar(&part, "part", "", "store key prefix of the executor's part")
	for _, f := range []string{"run", "shard", "part"} {
		cmd.MarkFlagRequired(f)
	}
	config.AddFlags(cmd.Flags(), "")
	return cmd
}

// runFinetuneWorker loads the run's config from the store and rolls out.
func runFinetuneWorker(ctx context.Context, store config.RegistryConfig, run string, sh eval.Shard, part string) error {
	b, err := registry.OpenBackend(store)
	if err != nil {
		return err
	}
	r, err := b.Get(ctx, run+"/config.yaml")
	if err != nil {
		return fmt.Errorf("rollout worker %s: the run's config: %w", sh, err)
	}
	path := filepath.Join(os.TempDir(), "schedrl-rollout-config.yaml")
	f, err := os.Create(path)
	if err == nil {
		_, err = f.ReadFrom(r)
		if err2 := f.Close(); err == nil {
			err = err2
		}
	}
	r.Close()
	if err != nil {
		return err
	}
	cfg, err := config.Load(path, nil)
	if err != nil {
		return fmt.Errorf("rollout worker %s: %w", sh, err)
	}
	cfg.Registry = store // this pod's store and credentials, not the learner's
	out, err := finetune.RolloutWorker(ctx, cfg, b, run, sh.Index, sh.Count)
	if err != nil {
		return err
	}
	if err := executor.WritePart(ctx, store, part, sh.Index, out); err != nil {
		return fmt.Errorf("rollout worker %s: %w", sh, err)
	}
	slog.Info("rollout worker done", "worker", sh.String(), "part", executor.PartKey(part, sh.Index, out))
	return nil
}
