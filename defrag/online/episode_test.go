package online

import (
	"math"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/sim"
	"github.com/schedrl/schedrl/sim/simtest"
)

// smallTimeline is 2 h of the default trace at load 1.1 on the first 120 openb nodes: a queue
// forms within minutes, so the trigger (every 5 min, head waited 1 min) invokes the agent.
func smallTimeline(t *testing.T) (Timeline, Config) {
	t.Helper()
	nodes, trace, model := simtest.OpenbTrace(t, "default")
	tl := Timeline{Nodes: nodes[:120], Trace: trace, Model: model, Load: 1.1, Seed: 5, Duration: 7200, Warmup: 1800, Cap: 3600,
		Placer: "fgd", Queue: "backfill"}
	cfg := DefaultConfig()
	cfg.Every, cfg.HeadWait = 300, 60
	return tl, cfg
}

// play runs an episode to its end, choosing with choose, and returns the summed reward.
func play(t *testing.T, e *Episode, choose func(obs *env.Observation) int) float64 {
	t.Helper()
	var obs env.Observation
	total := 0.0
	for !e.Done() {
		e.Observe(&obs)
		r, err := e.Step(env.Action{Candidate: choose(&obs)})
		if err != nil {
			t.Fatal(err)
		}
		total += r.Reward
	}
	return total
}

// first picks the first allowed candidate (stage one: a task, never STOP while one can move).
func first(obs *env.Observation) int {
	for i := range obs.NumNodes {
		if obs.Mask[i] {
			return i
		}
	}
	return -1
}

func stop(obs *env.Observation) int { return obs.NumNodes - 1 }

// An agent that always stops runs the baseline: the online reward is exactly zero and the
// delays are the baseline's. One that migrates earns, summed over the episode, the queued
// GPU-time avoided minus its downtime cost, and the world started its migrations.
func TestEpisodeRewardIsQueuedTimeAvoided(t *testing.T) {
	tl, cfg := smallTimeline(t)
	base, err := RunBaseline(tl, cfg)
	if err != nil {
		t.Fatal(err)
	}
	idle, err := NewEpisode(tl, cfg, env.DefragOptions{}, base)
	if err != nil {
		t.Fatal(err)
	}
	if idle.Done() {
		t.Fatal("the agent is never invoked")
	}
	if r := play(t, idle, stop); r != 0 {
		t.Errorf("a STOP-only agent earned %v", r)
	}
	if idle.Decisions == 0 || idle.Result().Migrations != 0 || idle.inv.queued != base.Total {
		t.Errorf("STOP-only: %d decisions, %d migrations, queued %v vs baseline %v", idle.Decisions, idle.Result().Migrations, idle.inv.queued, base.Total)
	}

	busy, err := NewEpisode(tl, cfg, env.DefragOptions{}, base)
	if err != nil {
		t.Fatal(err)
	}
	var cost float64
	var obs env.Observation
	total := 0.0
	for !busy.Done() {
		busy.Observe(&obs)
		stage := obs.Stage
		a := first(&obs)
		if stage == 0 {
			p := busy.inv.env.Tasks()[a]
			cost += 2 * cfg.Downtime(p.Task) * float64(p.Task.TotalGPUMilli()) / sim.MilliPerGPU
		}
		r, err := busy.Step(env.Action{Candidate: a})
		if err != nil {
			t.Fatal(err)
		}
		total += r.Reward
	}
	want := (base.Total - busy.inv.queued - cost) / 3600
	if math.Abs(total-want) > 1e-6*math.Max(1, math.Abs(want)) {
		t.Errorf("summed reward %v, want queued GPU-hours avoided minus downtime %v", total, want)
	}
	if busy.Migrated == 0 || busy.Result().Migrations == 0 || busy.Result().Migrations > busy.Migrated {
		t.Errorf("planned %d migrations, the world started %d", busy.Migrated, busy.Result().Migrations)
	}
}

// Closing an unfinished episode stops its world's goroutine.
func TestEpisodeCloseStopsTheWorld(t *testing.T) {
	tl, cfg := smallTimeline(t)
	base, err := RunBaseline(tl, cfg)
	if err != nil {
		t.Fatal(err)
	}
	before := runtime.NumGoroutine()
	e, err := NewEpisode(tl, cfg, env.DefragOptions{}, base)
	if err != nil {
		t.Fatal(err)
	}
	e.Close()
	e.Close()
	for range 100 {
		if runtime.NumGoroutine() <= before {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Errorf("%d goroutines after Close, %d before the episode", runtime.NumGoroutine(), before)
}

// An episode is a pure function of its timeline and actions: the same choices give the same
// rewards step by step.
func TestEpisodeIsDeterministic(t *testing.T) {
	tl, cfg := smallTimeline(t)
	tl.Duration = 3600
	tl.Warmup = 900
	base, err := RunBaseline(tl, cfg)
	if err != nil {
		t.Fatal(err)
	}
	rewards := func() []float64 {
		e, err := NewEpisode(tl, cfg, env.DefragOptions{RewardFragment: 1, MigrationCost: 0.1}, base)
		if err != nil {
			t.Fatal(err)
		}
		var out []float64
		var obs env.Observation
		for !e.Done() {
			e.Observe(&obs)
			r, err := e.Step(env.Action{Candidate: first(&obs)})
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, r.Reward)
		}
		return out
	}
	a, b := rewards(), rewards()
	if len(a) == 0 || !slices.Equal(a, b) {
		t.Errorf("two runs: %d and %d steps, rewards differ: %v vs %v", len(a), len(b), a, b)
	}
}
