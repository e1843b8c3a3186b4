package config

import "fmt"

// DefragConfig configures `schedrl defrag` and the defrag environment: the starting states,
// the migration budget and the reward weights.
type DefragConfig struct {
	// Budget bounds the migrations of a plan: >= 1 is a count, in (0, 1) a fraction of the
	// running tasks (rounded up).
	Budget float64 `mapstructure:"budget" yaml:"budget"`
	// MigrationCost is charged per GPU moved (and per node's worth of CPU moved).
	MigrationCost float64 `mapstructure:"migration_cost" yaml:"migration_cost"`
	// RewardFragment weighs the fragment removed (GPUs).
	RewardFragment float64 `mapstructure:"reward_fragment" yaml:"reward_fragment"`
	// RewardPending weighs the pending GPU work that becomes placeable (GPUs).
	RewardPending float64 `mapstructure:"reward_pending" yaml:"reward_pending"`
	// Departures is the share of running tasks removed at random after the arrivals.
	Departures float64 `mapstructure:"departures" yaml:"departures"`
	// MaxPending caps the pending queue of a starting state (first failed arrivals kept).
	MaxPending int `mapstructure:"max_pending" yaml:"max_pending"`
	// Samples is how many plans are sampled, the best kept.
	Samples int `mapstructure:"samples" yaml:"samples"`
	// Placer places pending tasks (and re-places evicted ones for evict-then-replace experts).
	Placer string `mapstructure:"placer" yaml:"placer"`
}

// SetDefaults: 50 migrations, fragment and pending work weighed alike, a tenth of a GPU's
// worth charged per GPU moved, 10% departures, 200 pending tasks, FGD placement.
func (c *DefragConfig) SetDefaults() {
	c.Budget = 50
	c.MigrationCost = 0.1
	c.RewardFragment = 1
	c.RewardPending = 1
	c.Departures = 0.1
	c.MaxPending = 200
	c.Samples = 1
	c.Placer = "fgd"
}

// Validate checks the section's fields; the placer name is checked by the defrag command.
func (c DefragConfig) Validate() error {
	switch {
	case !(c.Budget > 0) || (c.Budget > 1 && c.Budget != float64(int(c.Budget))):
		return fmt.Errorf("budget: must be a fraction in (0, 1) or a whole count >= 1, got %v", c.Budget)
	case c.MigrationCost < 0:
		return fmt.Errorf("migration_cost: must be >= 0, got %v", c.MigrationCost)
	case c.RewardFragment < 0:
		return fmt.Errorf("reward_fragment: must be >= 0, got %v", c.RewardFragment)
	case c.RewardPending < 0:
		return fmt.Errorf("reward_pending: must be >= 0, got %v", c.RewardPending)
	case !(c.Departures >= 0 && c.Departures < 1):
		return fmt.Errorf("departures: must be in [0, 1), got %v", c.Departures)
	case c.MaxPending < 1:
		return fmt.Errorf("max_pending: must be >= 1, got %d", c.MaxPending)
	case c.Samples < 1:
		return fmt.Errorf("samples: must be >= 1, got %d", c.Samples)
	case c.Placer == "":
		return fmt.Errorf("placer: must name a placement policy")
	}
	return nil
}
