package config

import (
	"strings"
	"testing"
)

func TestTimedEvalConfigValidateNamesTheKey(t *testing.T) {
	var def EvalConfig
	def.SetDefaults()
	def.Timed.Kind = "jobs"
	if err := def.Validate(); err != nil {
		t.Fatalf("defaults with kind jobs are invalid: %v", err)
	}
	for _, tc := range []struct {
		name    string
		edit    func(*TimedEvalConfig)
		wantErr string
	}{
		{"unknown kind", func(c *TimedEvalConfig) { c.Kind = "gavel" }, "timed.kind:"},
		{"no cluster", func(c *TimedEvalConfig) { c.Cluster = " " }, "timed.cluster:"},
		{"zero round", func(c *TimedEvalConfig) { c.Round = 0 }, "timed.round:"},
		{"negative load", func(c *TimedEvalConfig) { c.Load = -1 }, "timed.load:"},
		{"poisson without tasks", func(c *TimedEvalConfig) { c.Tasks = 0 }, "timed.tasks: a Poisson workload"},
		{"negative cap", func(c *TimedEvalConfig) { c.Cap = -1 }, "timed.cap:"},
		{"negative warmup", func(c *TimedEvalConfig) { c.Warmup = -5 }, "timed.warmup:"},
		{"no queue", func(c *TimedEvalConfig) { c.Queue = "" }, "timed.queue:"},
		{"zero series step", func(c *TimedEvalConfig) { c.SeriesStep = 0 }, "timed.series_step:"},
		{"no throughputs", func(c *TimedEvalConfig) { c.Throughputs = "" }, "timed.throughputs:"},
		{"tasks needs no table", func(c *TimedEvalConfig) { c.Kind, c.Throughputs = "tasks", "" }, ""},
		{"trace timestamps need no count", func(c *TimedEvalConfig) { c.Load, c.Tasks = 0, 0 }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := def
			tc.edit(&c.Timed)
			err := c.Validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
				t.Fatalf("Validate() = %v, want an error starting %q", err, tc.wantErr)
			}
		})
	}
}
