package config

import (
	"strings"
	"testing"
)

func TestFinetuneDefaultsValid(t *testing.T) {
	var c FinetuneConfig
	c.SetDefaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestFinetuneValidateNamesField(t *testing.T) {
	for _, tc := range []struct {
		key string
		set func(*FinetuneConfig)
	}{
		{"from", func(c *FinetuneConfig) { c.From = " " }},
		{"cluster_sizes[1]", func(c *FinetuneConfig) { c.ClusterSizes = []int{64, -1} }},
		{"total_steps", func(c *FinetuneConfig) { c.TotalSteps = c.NumEnvs*c.RolloutSteps - 1 }},
		{"gae_lambda", func(c *FinetuneConfig) { c.GAELambda = 1.5 }},
		{"minibatches", func(c *FinetuneConfig) { c.Minibatches = c.NumEnvs*c.RolloutSteps + 1 }},
		{"kl_decay", func(c *FinetuneConfig) { c.KLDecay = -0.1 }},
		{"seeds", func(c *FinetuneConfig) { c.Seeds = "40-50" }}, // meets eval seeds 49..51
		{"eval_seeds", func(c *FinetuneConfig) { c.EvalSeeds = "x" }},
		{"lr", func(c *FinetuneConfig) { c.LR = 0 }},
		{"avg_decay", func(c *FinetuneConfig) { c.AvgDecay = 1 }},
		{"env", func(c *FinetuneConfig) { c.Env = "migration" }},
		{"temperature", func(c *FinetuneConfig) { c.Temperature = 0 }},
		{"candidates", func(c *FinetuneConfig) { c.Candidates = "best" }},
		{"candidates", func(c *FinetuneConfig) { c.Env, c.Candidates = "defrag", "fgd-best" }},
		{"stagger", func(c *FinetuneConfig) { c.Env, c.Stagger = "defrag", true }},
		{"rollout_workers", func(c *FinetuneConfig) { c.RolloutWorkers = c.NumEnvs + 1 }},
		{"rollout_workers", func(c *FinetuneConfig) { c.RolloutWorkers = -1 }},
		{"rollout_workers", func(c *FinetuneConfig) { c.Env, c.RolloutWorkers = "maifs", 2 }},
		{"tie_prior", func(c *FinetuneConfig) { c.TiePrior = -1 }},
		{"tie_prior", func(c *FinetuneConfig) { c.Env, c.TiePrior = "defrag", 1 }},
		// 52 is a defrag held-out state even when eval_seeds does not name it.
		{"seeds", func(c *FinetuneConfig) { c.Env, c.Seeds, c.EvalSeeds = "defrag", "52", "49" }},
	} {
		var c FinetuneConfig
		c.SetDefaults()
		tc.set(&c)
		err := c.Validate()
		if err == nil || !strings.HasPrefix(err.Error(), tc.key+":") {
			t.Errorf("%s: got %v, want an error naming %s", tc.key, err, tc.key)
		}
	}
}
