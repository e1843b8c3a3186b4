package online

import (
	"strings"
	"testing"

	"github.com/schedrl/schedrl/policy"
	"github.com/schedrl/schedrl/sim"
	"github.com/schedrl/schedrl/sim/simtest"
	"github.com/schedrl/schedrl/tasks"
)

func TestValidateNamesTheKey(t *testing.T) {
	for key, mutate := range map[string]func(*Config){
		"every_s":            func(c *Config) { c.Every = 0 },
		"head_wait_s":        func(c *Config) { c.HeadWait = -1 },
		"budget":             func(c *Config) { c.Budget = 0 },
		"cap_per_hour":       func(c *Config) { c.CapPerHour = 0 },
		"downtime_base_s":    func(c *Config) { c.DowntimeBase = -1 },
		"downtime_per_gpu_s": func(c *Config) { c.DowntimePerGPU = -2 },
	} {
		c := DefaultConfig()
		mutate(&c)
		if err := c.Validate(); err == nil || !strings.HasPrefix(err.Error(), key+":") {
			t.Errorf("%s: error %v", key, err)
		}
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Error(err)
	}
	if d := DefaultConfig().Downtime(sim.Task{NumGPU: 2, GPUMilli: 1000}); d != DefaultDowntimeBase+2*DefaultDowntimePerGPU {
		t.Errorf("downtime of a 2-GPU task %v", d)
	}
}

// runOpenb runs 3 h of the default openb trace at load 1.1 with method (nil: none).
func runOpenb(t *testing.T, p Planner, cfg Config) (*tasks.Result, *Defragmenter) {
	t.Helper()
	nodes, trace, model := simtest.OpenbTrace(t, "default")
	c, err := sim.NewCluster(nodes, model)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetTieOrder(sim.SeededTieOrder(len(nodes), 7)); err != nil {
		t.Fatal(err)
	}
	_, _, capGPU := c.Capacity()
	w, err := tasks.NewWorkload(trace, capGPU, tasks.WorkloadConfig{Load: 1.1, Seed: 7, Cap: 3600, Duration: 3 * 3600})
	if err != nil {
		t.Fatal(err)
	}
	fgd, _ := policy.NewPlacer("fgd")
	q, _ := tasks.NewQueue("backfill")
	run := tasks.Config{Warmup: 3600, Seed: 7}
	var d *Defragmenter
	if p != nil {
		if d, err = New(cfg, p, fgd, 7); err != nil {
			t.Fatal(err)
		}
		run.Defrag = d
	}
	r, err := tasks.Run(c, fgd, q, w.Arrivals, run, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r, d
}

// Every method runs in the live cluster within its budget and cap, and charges downtime.
func TestMethodsInTheRunningCluster(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Every, cfg.HeadWait, cfg.Budget, cfg.CapPerHour = 300, 60, 5, 12
	base, _ := runOpenb(t, nil, cfg)
	if base.Migrations != 0 {
		t.Fatalf("no defragmenter, %d migrations", base.Migrations)
	}
	moved := 0
	for _, name := range Methods() {
		p, err := NewPlanner(name)
		if err != nil {
			t.Fatal(err)
		}
		r, d := runOpenb(t, p, cfg)
		hours := (r.Makespan + 3600) / 3600
		if r.Migrations > d.Invocations*cfg.Budget || float64(r.Migrations) > hours*float64(cfg.CapPerHour) {
			t.Errorf("%s: %d migrations in %d invocations over %.1f h", name, r.Migrations, d.Invocations, hours)
		}
		if r.Migrations > 0 {
			moved++
			if r.DowntimeS < float64(r.Migrations)*cfg.DowntimeBase {
				t.Errorf("%s: %d migrations, %v s downtime", name, r.Migrations, r.DowntimeS)
			}
		}
		if len(r.Measured()) != len(base.Measured()) {
			t.Errorf("%s: %d tasks measured, without defragmentation %d", name, len(r.Measured()), len(base.Measured()))
		}
	}
	if moved < 3 {
		t.Errorf("only %d methods migrated anything", moved)
	}
}

func TestMakeRoomIsDeterministic(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Every, cfg.HeadWait = 300, 60
	p, _ := NewPlanner("make-room")
	a, _ := runOpenb(t, p, cfg)
	b, _ := runOpenb(t, p, cfg)
	if a.Migrations == 0 || a.Migrations != b.Migrations || a.DowntimeS != b.DowntimeS || a.AllocGPUMeanPct != b.AllocGPUMeanPct {
		t.Errorf("make-room twice: %d/%d migrations, %v/%v s downtime", a.Migrations, b.Migrations, a.DowntimeS, b.DowntimeS)
	}
}

func TestUnknownMethod(t *testing.T) {
	if _, err := NewPlanner("defrag-everything"); err == nil || !strings.Contains(err.Error(), "make-room") {
		t.Errorf("error %v", err)
	}
}
