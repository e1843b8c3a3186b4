package stages

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/schedrl/schedrl/datasets"
	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/pipeline"
)

// datasetsStage replays the logs stage's decision logs into Parquet transitions.
type datasetsStage struct {
	cfg    config.DatasetsConfig
	maifs  config.MAIFSConfig
	defrag env.DefragOptions
	seed   uint64
	key    datasetsKey
}

type datasetsKey struct {
	Datasets config.DatasetsConfig `json:"datasets"`
	Defrag   *env.DefragOptions    `json:"defrag,omitempty"` // the defrag rewards of a defrag dataset
	// MAIFS is what a maifs dataset reads of the maifs section: the environment, the validation
	// seeds and every (the tables' content is in the logs' headers, checked by the build).
	MAIFS *datasets.MAIFSBuildOptions `json:"maifs,omitempty"`
	Seed  uint64                      `json:"seed"`
}

// defragRewards are the defrag section's reward weights (the budget comes from each log).
func defragRewards(c config.DefragConfig) env.DefragOptions {
	return env.DefragOptions{RewardFragment: c.RewardFragment, RewardPending: c.RewardPending, MigrationCost: c.MigrationCost}
}

func newDatasets(cfg config.Config) (*datasetsStage, error) {
	s := &datasetsStage{cfg: cfg.Datasets, maifs: cfg.MAIFS, defrag: defragRewards(cfg.Defrag), seed: uint64(cfg.Seed)}
	s.key = datasetsKey{Datasets: cfg.Datasets, Seed: s.seed}
	switch cfg.Datasets.Env {
	case env.DefragName:
		s.key.Defrag = &s.defrag
	case env.MAIFSName:
		if err := cfg.MAIFS.Validate(); err != nil {
			return nil, fmt.Errorf("maifs.%w", err)
		}
		o, err := datasets.MAIFSBuildOf(cfg.MAIFS, "", "", false)
		if err != nil {
			return nil, err
		}
		o.Throughputs, o.Profiles, o.Mapping = "", "", ""
		s.key.MAIFS = &o
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
	if s.cfg.Env == env.MAIFSName {
		return s.runMAIFS(e)
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

// runMAIFS rebuilds the fungible world's logs as multi-agent decision points.
func (s *datasetsStage) runMAIFS(e pipeline.Env) (pipeline.Result, error) {
	o, err := datasets.MAIFSBuildOf(s.maifs, filepath.Join(e.Inputs["logs"].Dir, "*"), e.OutDir, true)
	if err != nil {
		return pipeline.Result{}, err
	}
	m, stats, err := datasets.BuildMAIFS(o)
	if err != nil {
		return pipeline.Result{}, err
	}
	e.Log.Info("dataset built", "logs", stats.Logs, "decision_points", stats.Points, "rows", stats.Rows,
		"train_points", m.Splits[datasets.SplitTrain].Points, "val_points", m.Splits[datasets.SplitVal].Points)
	return pipeline.Result{Metric: &pipeline.Metric{Name: "decision_points", Value: float64(stats.Points)}}, nil
}
