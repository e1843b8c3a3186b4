package pretrain

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/family"
	"github.com/schedrl/schedrl/internal/config"
)

// CloneOptions are what Clone needs besides the config.
type CloneOptions struct {
	CodeRevision string // recorded in the manifest
	Log          *slog.Logger
	Bar          io.Writer // a progress bar here (a terminal); nil logs plain lines
}

// CloneFunc is a family's behaviour cloning, as Clone describes it.
type CloneFunc func(ctx context.Context, cfg config.Config, o CloneOptions) (family.Summary, error)

// cloners are the families' behaviour cloning, by datasets.env: each family's file registers
// its own.
var cloners = family.NewHooks[CloneFunc]("pretrain")

// Register adds family name's behaviour cloning; a second one for the same name panics.
func Register(name string, clone CloneFunc) { cloners.Register(name, clone) }

// Clone behaviour-clones the network of datasets.env's family from cfg.Pretrain.Dataset into
// cfg.Pretrain.Out, as the pipeline's pretrain stage runs it.
func Clone(ctx context.Context, cfg config.Config, o CloneOptions) (family.Summary, error) {
	clone, err := cloners.Lookup("datasets.env", cfg.Datasets.Env)
	if err != nil {
		return family.Summary{}, err
	}
	return clone(ctx, cfg, o)
}

// The single-agent families clone the entity network from transitions-v1 rows.
func init() {
	Register(env.PlacementName, cloneEntity)
	Register(env.DefragName, cloneEntity)
	registerJudge(env.PlacementName, expertJudge)
}

func cloneEntity(ctx context.Context, cfg config.Config, co CloneOptions) (family.Summary, error) {
	res, err := Run(ctx, Options{Pretrain: cfg.Pretrain, Network: cfg.Network, Device: cfg.Device,
		Seed: cfg.Seed, CodeRevision: co.CodeRevision, Log: co.Log, Bar: co.Bar})
	if err != nil {
		return family.Summary{}, err
	}
	return family.Summary{Metric: "val_agreement", Value: res.Best.ValAgreement,
		Note: fmt.Sprintf("%d epochs, %d steps, best epoch %d (exact %.3f), %s",
			res.Epochs, res.Steps, res.Best.Epoch, res.Best.ValExact, res.StopReason)}, nil
}
