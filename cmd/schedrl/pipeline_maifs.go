package main

import (
	"context"
	"fmt"

	"github.com/schedrl/schedrl/datasets"
	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/fungible"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/jobs"
	"github.com/schedrl/schedrl/nn"
	"github.com/schedrl/schedrl/pipeline"
	"github.com/schedrl/schedrl/pretrain"
)

// maifsEnv is the multi-agent environment's name (env.MAIFSName), for functions whose
// pipeline.Env parameter hides the env package.
const maifsEnv = env.MAIFSName

// maifsHeads is the attention heads of the pipeline's multi-agent network (maifs-bc's
// default); network.hidden must be a multiple of it.
const maifsHeads = 4

// pretrainMAIFS behaviour-clones the multi-agent network from the datasets stage's
// maifs-transitions-v1 dataset: each decision point rebuilt through env.MAIFS with the
// dataset's options on the maifs section's tables, network.hidden and network.head_hidden
// wide, pretrain.epochs of pretrain.batch_size decision points at pretrain.lr.
func pretrainMAIFS(ctx context.Context, cfg config.Config, pe pipeline.Env) (pipeline.Result, error) {
	dir := cfg.Pretrain.Dataset
	man, err := datasets.ReadMAIFSManifest(dir)
	if err != nil {
		return pipeline.Result{}, err
	}
	cluster, err := fungible.NewMixCluster(man.Cluster, man.ServerGPUs)
	if err != nil {
		return pipeline.Result{}, fmt.Errorf("%s: cluster: %w", dir, err)
	}
	table, err := jobs.LoadThroughputs(cfg.MAIFS.Throughputs)
	if err != nil {
		return pipeline.Result{}, fmt.Errorf("maifs.throughputs: %w", err)
	}
	m, err := fungible.LoadSpeedModel(table, cfg.MAIFS.Profiles, cfg.MAIFS.Mapping)
	if err != nil {
		return pipeline.Result{}, fmt.Errorf("maifs: %w", err)
	}
	e, err := env.NewMAIFS(cluster, m, man.Options)
	if err != nil {
		return pipeline.Result{}, err
	}
	train, err := datasets.ReadMAIFS(dir, datasets.SplitTrain, e)
	if err != nil {
		return pipeline.Result{}, err
	}
	val, err := datasets.ReadMAIFS(dir, datasets.SplitVal, e)
	if err != nil {
		return pipeline.Result{}, err
	}
	dev, err := nn.Device(cfg.Device)
	if err != nil {
		return pipeline.Result{}, err
	}
	rev, err := pipeline.CodeRevision()
	if err != nil {
		return pipeline.Result{}, err
	}
	arch := nn.NewMAIFSArch(cfg.Network.Hidden, maifsHeads, cfg.Network.HeadHidden, true, e.Options())
	res, err := pretrain.RunMAIFS(ctx, pretrain.MAIFSOptions{Arch: arch, Train: train, Val: val, Epochs: cfg.Pretrain.Epochs,
		Batch: cfg.Pretrain.BatchSize, LR: cfg.Pretrain.LR, OrderWeight: 1, LabelSmoothing: cfg.MAIFS.LabelSmoothing, Seed: cfg.Seed, Dev: dev, Out: pe.OutDir,
		Lineage: nn.Lineage{CodeRevision: rev, Hyper: map[string]any{"expert": man.Source["expert"], "order": man.Source["order"],
			"epochs": cfg.Pretrain.Epochs, "batch": cfg.Pretrain.BatchSize, "lr": cfg.Pretrain.LR}},
		Progress: func(epoch int, loss, agree float64) {
			pe.Log.Info("maifs pretrain: epoch", "epoch", epoch, "loss", fmt.Sprintf("%.4f", loss), "val_agreement", fmt.Sprintf("%.4f", agree))
		}})
	if err != nil {
		return pipeline.Result{}, err
	}
	return pipeline.Result{
		Metric: &pipeline.Metric{Name: "val_agreement", Value: res.Agreement},
		Note: fmt.Sprintf("%d training and %d validation decision points, %d epochs, loss %.4f, exact %.3f",
			len(train), len(val), cfg.Pretrain.Epochs, res.Loss, res.Exact),
	}, nil
}
