package config

import (
	"strings"
	"testing"
)

func TestSimConfigValidate(t *testing.T) {
	var def SimConfig
	def.SetDefaults()
	if err := def.Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	for _, tc := range []struct {
		name string
		edit func(*SimConfig)
		want string
	}{
		{"no nodes", func(c *SimConfig) { c.Nodes = "" }, "nodes:"},
		{"no pods", func(c *SimConfig) { c.Pods = "" }, "pods:"},
		{"no policy", func(c *SimConfig) { c.Policy = "" }, "policy:"},
		{"tune zero", func(c *SimConfig) { c.Tune = 0 }, "tune: must be in (0, 10], got 0"},
		{"tune huge", func(c *SimConfig) { c.Tune = 11 }, "tune:"},
		{"coverage", func(c *SimConfig) { c.Coverage = 1.5 }, "coverage: must be in (0, 1], got 1.5"},
	} {
		c := def
		tc.edit(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate() = %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestSimConfigLoadsFromFlagsAndEnv(t *testing.T) {
	t.Setenv("SCHEDRL_SIM_POLICY", "bestfit")
	cfg, err := Load("", nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Sim.Policy != "bestfit" || cfg.Sim.Tune != 1.3 || cfg.Sim.Seed != 42 {
		t.Fatalf("sim section %+v", cfg.Sim)
	}
	t.Setenv("SCHEDRL_SIM_TUNE", "-2")
	if _, err := Load("", nil); err == nil || !strings.Contains(err.Error(), "sim.tune") {
		t.Fatalf("invalid tune from the environment: %v", err)
	}
}
