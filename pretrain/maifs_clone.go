package pretrain

import (
	"context"
	"fmt"

	"github.com/schedrl/schedrl/datasets"
	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/family"
	"github.com/schedrl/schedrl/fungible"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/nn"
)

// MAIFSHeads and MAIFSOrderWeight are the multi-agent cloning's attention heads (network.hidden
// must be a multiple) and order-loss weight, `schedrl maifs-bc`'s defaults and the pipeline's.
const (
	MAIFSHeads       = 4
	MAIFSOrderWeight = 1
)

// The maifs family clones the multi-agent attention network from maifs-transitions-v1 rows.
func init() { Register(env.MAIFSName, cloneMAIFS) }

// cloneMAIFS behaviour-clones the multi-agent network from the maifs-transitions-v1 dataset
// pretrain.dataset: each decision point rebuilt through env.MAIFS with the dataset's options on
// the maifs section's tables, network.hidden and network.head_hidden wide, pretrain.epochs of
// pretrain.batch_size decision points at pretrain.lr.
func cloneMAIFS(ctx context.Context, cfg config.Config, co CloneOptions) (family.Summary, error) {
	dir := cfg.Pretrain.Dataset
	man, err := datasets.ReadMAIFSManifest(dir)
	if err != nil {
		return family.Summary{}, err
	}
	cluster, err := fungible.NewMixCluster(man.Cluster, man.ServerGPUs)
	if err != nil {
		return family.Summary{}, fmt.Errorf("%s: cluster: %w", dir, err)
	}
	m, err := fungible.LoadModel(datasets.MAIFSWorld(cfg.MAIFS), "maifs.")
	if err != nil {
		return family.Summary{}, err
	}
	e, err := env.NewMAIFS(cluster, m, man.Options)
	if err != nil {
		return family.Summary{}, err
	}
	train, err := datasets.ReadMAIFS(dir, datasets.SplitTrain, e)
	if err != nil {
		return family.Summary{}, err
	}
	val, err := datasets.ReadMAIFS(dir, datasets.SplitVal, e)
	if err != nil {
		return family.Summary{}, err
	}
	dev, err := nn.Device(cfg.Device)
	if err != nil {
		return family.Summary{}, err
	}
	arch := nn.NewMAIFSArch(cfg.Network.Hidden, MAIFSHeads, cfg.Network.HeadHidden, true, e.Options())
	res, err := RunMAIFS(ctx, MAIFSOptions{Arch: arch, Train: train, Val: val, Epochs: cfg.Pretrain.Epochs,
		Batch: cfg.Pretrain.BatchSize, LR: cfg.Pretrain.LR, OrderWeight: MAIFSOrderWeight, LabelSmoothing: cfg.MAIFS.LabelSmoothing, Seed: cfg.Seed, Dev: dev, Out: cfg.Pretrain.Out,
		Lineage: nn.Lineage{CodeRevision: co.CodeRevision, Hyper: map[string]any{"expert": man.Source["expert"], "order": man.Source["order"],
			"epochs": cfg.Pretrain.Epochs, "batch": cfg.Pretrain.BatchSize, "lr": cfg.Pretrain.LR}},
		Progress: func(epoch int, loss, agree float64) {
			if co.Log != nil {
				co.Log.Info("maifs pretrain: epoch", "epoch", epoch, "loss", fmt.Sprintf("%.4f", loss), "val_agreement", fmt.Sprintf("%.4f", agree))
			}
		}})
	if err != nil {
		return family.Summary{}, err
	}
	return family.Summary{Metric: "val_agreement", Value: res.Agreement,
		Note: fmt.Sprintf("%d training and %d validation decision points, %d epochs, loss %.4f, exact %.3f",
			len(train), len(val), cfg.Pretrain.Epochs, res.Loss, res.Exact)}, nil
}
