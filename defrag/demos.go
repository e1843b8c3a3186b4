package defrag

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"

	"github.com/schedrl/schedrl/env"
)

// DemoRun is one demonstration log written by Demos.
type DemoRun struct {
	Seed uint64 `json:"seed"`
	Log  string `json:"log"`
	Plan Plan   `json:"plan"`
}

// Demos makes the starting state of each seed, plans it with the named method (one sample) at
// the budget and writes the plan as a migration log, dir/seed-NNNNN.jsonl: the expert
// demonstrations `datasets build --env defrag` turns into transitions. Use training seeds,
// never the held-out ones the methods are compared on.
func Demos(base StateSpec, seeds []uint64, method, placer string, opts env.DefragOptions, budget float64, dir string) ([]DemoRun, error) {
	planner, err := NewPlanner(method)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var runs []DemoRun
	for _, seed := range seeds {
		snap, pr, err := seedProblem(base, seed, placer, opts, budget)
		if err != nil {
			return nil, err
		}
		plan, err := Best(pr, planner, 1, seed)
		if err != nil {
			return nil, fmt.Errorf("seed %d: %w", seed, err)
		}
		path := filepath.Join(dir, fmt.Sprintf("seed-%05d.jsonl", seed))
		meta := map[string]string{"protocol": "defrag-demos", "policy": plan.Method}
		for k, v := range snap.Meta {
			meta["state_"+k] = v
		}
		meta["state_seed"] = strconv.FormatUint(seed, 10)
		if err := WriteLog(path, pr, plan, meta); err != nil {
			return nil, fmt.Errorf("seed %d: %w", seed, err)
		}
		slog.Info("defrag demos: log", "seed", seed, "log", path, "migrations", len(plan.Steps),
			"frag_ratio_before", plan.Before.FragRatioPct, "frag_ratio_after", plan.After.FragRatioPct)
		runs = append(runs, DemoRun{Seed: seed, Log: path, Plan: plan})
	}
	return runs, nil
}
