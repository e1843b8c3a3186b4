package config

import (
	"fmt"
	"math"
)

// DefragOnlineConfig configures the defrag-online environment (finetune.env: defrag-online)
// and its demonstrations: the timelines (offered loads, horizon, warm-up, run-time cap), the
// trigger, budget, cap and downtime of docs/defrag-online.md, the heuristic whose invocations
// are cloned, and the weight of the defrag environment's per-migration reward. Training
// timelines come from finetune's node list, traces, seeds and cluster sizes; a timeline's
// load is Loads[seed mod len(Loads)].
type DefragOnlineConfig struct {
	Loads    []float64 `mapstructure:"loads" yaml:"loads"`
	Duration float64   `mapstructure:"duration_s" yaml:"duration_s"`
	Warmup   float64   `mapstructure:"warmup_s" yaml:"warmup_s"`
	Cap      float64   `mapstructure:"cap_s" yaml:"cap_s"`
	// The trigger, budget and downtime (online.Config, which checks their ranges).
	Every          float64 `mapstructure:"every_s" yaml:"every_s"`
	HeadWait       float64 `mapstructure:"head_wait_s" yaml:"head_wait_s"`
	Budget         int     `mapstructure:"budget" yaml:"budget"`
	CapPerHour     int     `mapstructure:"cap_per_hour" yaml:"cap_per_hour"`
	DowntimeBase   float64 `mapstructure:"downtime_base_s" yaml:"downtime_base_s"`
	DowntimePerGPU float64 `mapstructure:"downtime_per_gpu_s" yaml:"downtime_per_gpu_s"`
	// Expert is the online method whose invocations the demonstrations record.
	Expert string `mapstructure:"expert" yaml:"expert"`
	// Shaping scales the defrag section's reward weights for each migration step; the online
	// reward (queued GPU-hours avoided minus downtime) comes on top at weight 1.
	Shaping float64 `mapstructure:"shaping" yaml:"shaping"`
	// HeldOut are the timeline seeds the methods are compared on; training refuses them.
	HeldOut string `mapstructure:"held_out_seeds" yaml:"held_out_seeds"`
}

// SetDefaults: loads 1.0 and 1.1, 8 h with 4 h of warm-up, the 4 h cap, the probe's trigger
// (every 10 min when the head waited 5 min, budget 10, 30 an hour), 10 s + 20 s per GPU of
// downtime, make-room as the expert, a tenth of the defrag rewards as shaping, timelines
// 101-103 held out (the baseline table's).
func (c *DefragOnlineConfig) SetDefaults() {
	*c = DefragOnlineConfig{Loads: []float64{1.0, 1.1}, Duration: 8 * 3600, Warmup: 4 * 3600, Cap: 4 * 3600,
		Every: 600, HeadWait: 300, Budget: 10, CapPerHour: 30, DowntimeBase: 10, DowntimePerGPU: 20,
		Expert: "make-room", Shaping: 0.1, HeldOut: "101-103"}
}

// Validate checks the timeline keys and the expert's presence; the trigger keys are checked
// by online.Config where the environment is built, before any work.
func (c DefragOnlineConfig) Validate() error {
	if len(c.Loads) == 0 {
		return fmt.Errorf("loads: list at least one offered load")
	}
	for i, l := range c.Loads {
		if !(l > 0 && l <= 10) {
			return fmt.Errorf("loads[%d]: must be in (0, 10], got %v", i, l)
		}
	}
	switch {
	case !(c.Duration > 0) || math.IsInf(c.Duration, 0):
		return fmt.Errorf("duration_s: must be > 0 seconds, got %v", c.Duration)
	case !(c.Warmup >= 0 && c.Warmup < c.Duration):
		return fmt.Errorf("warmup_s: must be in [0, duration_s %v), got %v", c.Duration, c.Warmup)
	case c.Cap < 0:
		return fmt.Errorf("cap_s: must be >= 0 seconds, got %v", c.Cap)
	case c.Expert == "":
		return fmt.Errorf("expert: must name an online method")
	case c.Shaping < 0:
		return fmt.Errorf("shaping: must be >= 0, got %v", c.Shaping)
	}
	if _, err := ParseSeeds(c.HeldOut); err != nil {
		return fmt.Errorf("held_out_seeds: %w", err)
	}
	return nil
}
