package config

import (
	"strings"
	"testing"
)

func TestDefragConfigValidate(t *testing.T) {
	var def DefragConfig
	def.SetDefaults()
	if err := def.Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	for _, ok := range []float64{0.05, 1, 50} {
		c := def
		c.Budget = ok
		if err := c.Validate(); err != nil {
			t.Errorf("budget %v: %v", ok, err)
		}
	}
	for _, tc := range []struct {
		name string
		edit func(*DefragConfig)
		want string
	}{
		{"budget zero", func(c *DefragConfig) { c.Budget = 0 }, "budget: must be a fraction"},
		{"budget not whole", func(c *DefragConfig) { c.Budget = 2.5 }, "got 2.5"},
		{"cost", func(c *DefragConfig) { c.MigrationCost = -1 }, "migration_cost:"},
		{"fragment weight", func(c *DefragConfig) { c.RewardFragment = -1 }, "reward_fragment:"},
		{"pending weight", func(c *DefragConfig) { c.RewardPending = -0.5 }, "reward_pending:"},
		{"departures", func(c *DefragConfig) { c.Departures = 1 }, "departures: must be in [0, 1)"},
		{"max pending", func(c *DefragConfig) { c.MaxPending = 0 }, "max_pending:"},
		{"samples", func(c *DefragConfig) { c.Samples = 0 }, "samples:"},
		{"placer", func(c *DefragConfig) { c.Placer = "" }, "placer:"},
	} {
		c := def
		tc.edit(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate() = %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestDefragConfigFromEnv(t *testing.T) {
	t.Setenv("SCHEDRL_DEFRAG_BUDGET", "0.1")
	cfg, err := Load("", nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Defrag.Budget != 0.1 || cfg.Defrag.Placer != "fgd" || cfg.Defrag.Samples != 1 {
		t.Fatalf("defrag section %+v", cfg.Defrag)
	}
}
