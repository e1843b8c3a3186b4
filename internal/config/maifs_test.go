package config

import (
	"slices"
	"strings"
	"testing"
)

func TestMAIFSConfigValidate(t *testing.T) {
	var def MAIFSConfig
	def.SetDefaults()
	if err := def.Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	for key, edit := range map[string]func(*MAIFSConfig){
		"cluster:":         func(c *MAIFSConfig) { c.Cluster = "108" },
		"servers_gpus:":    func(c *MAIFSConfig) { c.ServerGPUs = 0 },
		"throughputs:":     func(c *MAIFSConfig) { c.Throughputs = "" },
		"profiles:":        func(c *MAIFSConfig) { c.Profiles = "" },
		"mapping:":         func(c *MAIFSConfig) { c.Mapping = "" },
		"window:":          func(c *MAIFSConfig) { c.Window = 0 },
		"partners:":        func(c *MAIFSConfig) { c.Partners = 0 },
		"window_order:":    func(c *MAIFSConfig) { c.WindowOrder = "oldest" },
		"makespan_weight:": func(c *MAIFSConfig) { c.MakespanWeight = 0 },
		"expert:":          func(c *MAIFSConfig) { c.Expert = "" },
		"order:":           func(c *MAIFSConfig) { c.Order = "" },
		"generate:":        func(c *MAIFSConfig) { c.Generate = nil },
		"generate[1]:":     func(c *MAIFSConfig) { c.Generate = []string{"jobs=10,lam=900", " "} },
		"every:":           func(c *MAIFSConfig) { c.Every = 0 },
		"ppo_generate:":    func(c *MAIFSConfig) { c.PPOGenerate = nil },
		"label_smoothing:": func(c *MAIFSConfig) { c.LabelSmoothing = 1 },
		"shaping:":         func(c *MAIFSConfig) { c.Shaping = -1 },
		"held_out_seeds:":  func(c *MAIFSConfig) { c.HeldOut = "x" },
		"seeds:":           func(c *MAIFSConfig) { c.Seeds = "50-60" },
		"val_seeds:":       func(c *MAIFSConfig) { c.ValSeeds = "58" },
		"ppo_seeds:":       func(c *MAIFSConfig) { c.PPOSeeds = "900-901" },
	} {
		c := def
		edit(&c)
		if err := c.Validate(); err == nil || !strings.HasPrefix(err.Error(), key) {
			t.Errorf("%s: error %v", key, err)
		}
	}
	shared := def
	shared.PPOSeeds = shared.Seeds // behaviour cloning and PPO may train on the same workloads
	if err := shared.Validate(); err != nil {
		t.Errorf("shared training seeds refused: %v", err)
	}
}

func TestMAIFSConfigLoads(t *testing.T) {
	cfg, err := Load(writeConfig(t, "maifs:\n  cluster: \"8:8:8\"\n  generate: [\"jobs=20,lam=900\"]\n"), flagSet(t, "--set", "maifs.window=12"))
	if err != nil {
		t.Fatal(err)
	}
	if m := cfg.MAIFS; m.Cluster != "8:8:8" || m.Window != 12 || !slices.Equal(m.Generate, []string{"jobs=20,lam=900"}) || m.ServerGPUs != 8 {
		t.Errorf("maifs section %+v", m)
	}
	_, err = Load(writeConfig(t, "maifs: {}\n"), flagSet(t, "--set", "maifs.window_order=lifo"))
	if err == nil || !strings.Contains(err.Error(), "maifs.window_order") {
		t.Errorf("bad maifs.window_order: %v", err)
	}
	_, err = Load(writeConfig(t, "maifs:\n  windw: 3\n"), nil)
	if err == nil || !strings.Contains(err.Error(), `unknown key "maifs.windw" (did you mean "maifs.window"?)`) {
		t.Errorf("misspelt key: %v", err)
	}
	_, err = Load(writeConfig(t, "maifs:\n  val_seeds: \"49\"\n"), nil)
	if err == nil || !strings.Contains(err.Error(), "maifs.val_seeds: seed 49 is also in held_out_seeds") || !strings.Contains(err.Error(), "cfg.yaml:2:") {
		t.Errorf("held-out validation seed: %v", err)
	}
}
