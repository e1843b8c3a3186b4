package config

import (
	"strings"
	"testing"
)

func TestDefragOnlineConfigValidate(t *testing.T) {
	var def DefragOnlineConfig
	def.SetDefaults()
	if err := def.Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	for key, edit := range map[string]func(*DefragOnlineConfig){
		"loads:":          func(c *DefragOnlineConfig) { c.Loads = nil },
		"loads[1]:":       func(c *DefragOnlineConfig) { c.Loads = []float64{1, 0} },
		"duration_s:":     func(c *DefragOnlineConfig) { c.Duration = -1 },
		"warmup_s:":       func(c *DefragOnlineConfig) { c.Warmup = c.Duration },
		"cap_s:":          func(c *DefragOnlineConfig) { c.Cap = -1 },
		"expert:":         func(c *DefragOnlineConfig) { c.Expert = "" },
		"shaping:":        func(c *DefragOnlineConfig) { c.Shaping = -1 },
		"held_out_seeds:": func(c *DefragOnlineConfig) { c.HeldOut = "x" },
	} {
		c := def
		c.Loads = append([]float64(nil), def.Loads...)
		edit(&c)
		if err := c.Validate(); err == nil || !strings.HasPrefix(err.Error(), key) {
			t.Errorf("%s: error %v", key, err)
		}
	}
}
