package stages

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/schedrl/schedrl/datasets"
	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/family"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/pipeline"
)

// datasetsStage replays the logs stage's decision logs into the rows of datasets.env's family
// (its family.Dataset).
type datasetsStage struct {
	cfg   config.Config
	build *family.Dataset
	key   datasetsKey
}

type datasetsKey struct {
	Datasets config.DatasetsConfig `json:"datasets"`
	// Family is what the family's builder reads beyond the datasets section (Dataset.Key).
	Family any    `json:"family,omitempty"`
	Seed   uint64 `json:"seed"`
}

func newDatasets(cfg config.Config) (*datasetsStage, error) {
	f, err := family.Lookup("datasets.env", cfg.Datasets.Env)
	if err != nil {
		return nil, err
	}
	if f.Dataset == nil {
		return nil, fmt.Errorf("datasets.env: %q: the family builds no dataset (those that do: %v)", f.Name,
			family.Names(func(f family.Family) bool { return f.Dataset != nil }))
	}
	s := &datasetsStage{cfg: cfg, build: f.Dataset}
	s.key = datasetsKey{Datasets: cfg.Datasets, Seed: uint64(cfg.Seed)}
	if f.Dataset.Key != nil {
		if s.key.Family, err = f.Dataset.Key(cfg); err != nil {
			return nil, err
		}
	}
	// The logs come from the logs stage (whose hash is in the key), the output goes where the
	// pipeline says, and the worker count does not change the rows.
	s.key.Datasets.Logs, s.key.Datasets.Out, s.key.Datasets.Force, s.key.Datasets.Workers = "", "", false, 0
	return s, nil
}

func (s *datasetsStage) Name() string     { return "datasets" }
func (s *datasetsStage) Inputs() []string { return []string{"logs"} }
func (s *datasetsStage) Config() any      { return s.key }

func (s *datasetsStage) Run(ctx context.Context, e pipeline.Env) (pipeline.Result, error) {
	if err := ctx.Err(); err != nil {
		return pipeline.Result{}, err
	}
	cfg := s.cfg
	// The pipeline's partial directory already exists, empty; the logs stage's header checks
	// stand for datasets.nodes.
	cfg.Datasets.Logs, cfg.Datasets.Out, cfg.Datasets.Force, cfg.Datasets.Nodes = filepath.Join(e.Inputs["logs"].Dir, "*"), e.OutDir, true, ""
	return s.build.Build(ctx, cfg, e.Log)
}

// entityDataset is the transitions-v1 builder of the single-agent families (placement,
// defrag): one row per decision of the datasets section's environment; key is what of the
// config beyond the datasets section the rows read.
func entityDataset(key func(config.Config) (any, error)) *family.Dataset {
	return &family.Dataset{Key: key, Build: buildEntityDataset}
}

func buildEntityDataset(_ context.Context, cfg config.Config, log *slog.Logger) (pipeline.Result, error) {
	c := cfg.Datasets
	m, stats, err := datasets.Build(datasets.BuildOptions{
		Logs: c.Logs, Env: c.Env, Out: c.Out, Force: c.Force, Nodes: c.Nodes,
		ValFraction: c.ValFraction, Seed: uint64(cfg.Seed), ShardRows: c.ShardRows, RowGroupRows: c.RowGroupRows,
		Workers: c.Workers, Gamma: c.Gamma,
		EnvOptions: env.Options{RewardPlaced: c.RewardPlaced, RewardFragment: c.RewardFragment},
		Defrag:     defragRewards(cfg.Defrag),
	})
	if err != nil {
		return pipeline.Result{}, err
	}
	secs := stats.Elapsed.Seconds()
	log.Info("dataset built", "out", c.Out, "rows", m.Rows, "episodes", len(m.Episodes),
		"train_rows", m.Splits[datasets.SplitTrain].Rows, "val_rows", m.Splits[datasets.SplitVal].Rows,
		"parquet_bytes", stats.Bytes, "bytes_per_row", fmt.Sprintf("%.1f", float64(stats.Bytes)/float64(m.Rows)),
		"seconds", fmt.Sprintf("%.2f", secs), "rows_per_second", fmt.Sprintf("%.0f", float64(m.Rows)/secs))
	return pipeline.Result{Metric: &pipeline.Metric{Name: "rows", Value: float64(m.Rows)}}, nil
}

// defragRewards are the defrag section's reward weights (the budget comes from each log).
func defragRewards(c config.DefragConfig) env.DefragOptions {
	return env.DefragOptions{RewardFragment: c.RewardFragment, RewardPending: c.RewardPending, MigrationCost: c.MigrationCost}
}
