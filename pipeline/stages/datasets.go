package stages

import (
	"context"
	"path/filepath"

	"github.com/schedrl/schedrl/datasets"
	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/pipeline"
)

// datasetsStage replays the logs stage's decision logs into Parquet transitions.
type datasetsStage struct {
	cfg    config.DatasetsConfig
	defrag env.DefragOptions
	seed   uint64
	key    datasetsKey
}

type datasetsKey struct {
	Datasets config.DatasetsConfig `json:"datasets"`
	Defrag   *env.DefragOptions    `json:"defrag,omitempty"` // the defrag rewards of a defrag dataset
	Seed     uint64                `json:"seed"`
}

// defragRewards are the defrag section's reward weights (the budget comes from each log).
func defragRewards(c config.DefragConfig) env.DefragOptions {
	return env.DefragOptions{RewardFragment: c.RewardFragment, RewardPending: c.RewardPending, MigrationCost: c.MigrationCost}
}

func newDatasets(cfg config.Config) *datasetsStage {
	s := &datasetsStage{cfg: cfg.Datasets, defrag: defragRewards(cfg.Defrag), seed: uint64(cfg.Seed)}
	s.key = datasetsKey{Datasets: cfg.Datasets, Seed: s.seed}
	if cfg.Datasets.Env == env.DefragName {
		s.key.Defrag = &s.defrag
	}
	// The logs come from the logs stage (whose hash is in the key), the output goes where the
	// pipeline says, and the worker count does not change the rows.
	s.key.Datasets.Logs, s.key.Datasets.Out, s.key.Datasets.Force, s.key.Datasets.Workers = "", "", false, 0
	return s
}

func (s *datasetsStage) Name() string     { return "datasets" }
func (s *datasetsStage) Inputs() []string { return []string{"logs"} }
func (s *datasetsStage) Config() any      { return s.key }

func (s *datasetsStage) Run(ctx context.Context, e pipeline.Env) (pipeline.Result, error) {
	if err := ctx.Err(); err != nil {
		return pipeline.Result{}, err
	}
	m, stats, err := datasets.Build(datasets.BuildOptions{
		Logs:         filepath.Join(e.Inputs["logs"].Dir, "*"),
		Env:          s.cfg.Env,
		Out:          e.OutDir,
		Force:        true, // the pipeline's partial directory already exists, empty
		ValFraction:  s.cfg.ValFraction,
		Seed:         s.seed,
		ShardRows:    s.cfg.ShardRows,
		RowGroupRows: s.cfg.RowGroupRows,
		Workers:      s.cfg.Workers,
		EnvOptions:   env.Options{RewardPlaced: s.cfg.RewardPlaced, RewardFragment: s.cfg.RewardFragment},
		Defrag:       s.defrag,
		Gamma:        s.cfg.Gamma,
	})
	if err != nil {
		return pipeline.Result{}, err
	}
	e.Log.Info("dataset built", "rows", m.Rows, "episodes", stats.Episodes, "bytes", stats.Bytes,
		"rows_per_second", int(float64(stats.Rows)/stats.Elapsed.Seconds()))
	return pipeline.Result{Metric: &pipeline.Metric{Name: "rows", Value: float64(m.Rows)}}, nil
}
