package config

import (
	"fmt"
	"slices"
)

// DatasetsConfig configures `schedrl datasets build`: which decision logs become transitions,
// for which environment, and how the Parquet output is laid out.
type DatasetsConfig struct {
	// Logs is a glob of decision-log files (JSON lines, docs/decision-log.md).
	Logs string `mapstructure:"logs" yaml:"logs"`
	// Env is the environment whose observations and rewards the transitions follow; maifs
	// builds from the fungible world's logs with the maifs section (tables, val_seeds, every).
	Env string `mapstructure:"env" yaml:"env"`
	// Out is the dataset directory; Force replaces an existing one.
	Out   string `mapstructure:"out" yaml:"out"`
	Force bool   `mapstructure:"force" yaml:"force"`
	// Nodes, when set, is a node-list CSV that every log header must match.
	Nodes string `mapstructure:"nodes" yaml:"nodes"`
	// ValFraction of the episodes (logs) go to the validation split, chosen by the top-level seed.
	ValFraction float64 `mapstructure:"val_fraction" yaml:"val_fraction"`
	// ShardRows bounds the rows of one Parquet file; RowGroupRows the rows of one row group.
	ShardRows    int `mapstructure:"shard_rows" yaml:"shard_rows"`
	RowGroupRows int `mapstructure:"row_group_rows" yaml:"row_group_rows"`
	// Workers replay logs in parallel; 0 means one per CPU.
	Workers int `mapstructure:"workers" yaml:"workers"`
	// Reward = RewardPlaced x GPUs placed - RewardFragment x fragment added (in GPUs), for
	// placement; defrag datasets take their reward weights from the defrag section and each
	// episode's budget and placer from its log.
	RewardPlaced   float64 `mapstructure:"reward_placed" yaml:"reward_placed"`
	RewardFragment float64 `mapstructure:"reward_fragment" yaml:"reward_fragment"`
	// Gamma discounts the stored return-to-go (use the same value as PPO).
	Gamma float64 `mapstructure:"gamma" yaml:"gamma"`
}

// DatasetEnvs are the environments a dataset can be built for; family.Register adds a family
// with a dataset builder beyond these.
var DatasetEnvs = []string{"placement", "defrag", "maifs"}

// SetDefaults fills the built-in defaults.
func (c *DatasetsConfig) SetDefaults() {
	c.Env = "placement"
	c.ValFraction = 0.1
	c.ShardRows = 100_000
	c.RowGroupRows = 8192
	c.RewardPlaced = 1
	c.RewardFragment = 1
	c.Gamma = 0.99
}

// Validate checks ranges; Logs and Out may be empty here and be given as flags instead.
func (c DatasetsConfig) Validate() error {
	switch {
	case !slices.Contains(DatasetEnvs, c.Env):
		return fmt.Errorf("env: unknown environment %q (want one of %v)", c.Env, DatasetEnvs)
	case c.ValFraction < 0 || c.ValFraction >= 1:
		return fmt.Errorf("val_fraction: must be in [0, 1), got %g", c.ValFraction)
	case c.ShardRows < 1:
		return fmt.Errorf("shard_rows: must be >= 1, got %d", c.ShardRows)
	case c.RowGroupRows < 1:
		return fmt.Errorf("row_group_rows: must be >= 1, got %d", c.RowGroupRows)
	case c.Workers < 0:
		return fmt.Errorf("workers: must be >= 0, got %d", c.Workers)
	case c.RewardPlaced < 0:
		return fmt.Errorf("reward_placed: must be >= 0, got %g", c.RewardPlaced)
	case c.RewardFragment < 0:
		return fmt.Errorf("reward_fragment: must be >= 0, got %g", c.RewardFragment)
	case c.Gamma <= 0 || c.Gamma > 1:
		return fmt.Errorf("gamma: must be in (0, 1], got %g", c.Gamma)
	}
	return nil
}
