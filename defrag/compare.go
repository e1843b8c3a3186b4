package defrag

import (
	"fmt"

	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/policy"
	"github.com/schedrl/schedrl/sim"
)

// NewProblem builds a problem from a snapshot file's state; opts.Budget <= 0 is filled in by
// budget (a count >= 1 or a fraction of the running tasks).
func NewProblem(s sim.SnapshotFile, placerName string, opts env.DefragOptions) (Problem, error) {
	c, pending, err := s.Build()
	if err != nil {
		return Problem{}, err
	}
	placer, err := policy.NewPlacer(placerName)
	if err != nil {
		return Problem{}, err
	}
	return Problem{Cluster: c, Pending: pending, Placer: placer, Options: opts}, nil
}

// Row is one method's plan on one state.
type Row struct {
	Seed   uint64  `json:"seed"`
	Method string  `json:"method"`
	Before Outcome `json:"before"`
	After  Outcome `json:"after"`
	Wall   float64 `json:"wall_seconds"`
}

// seedProblem makes the state of base at seed and the problem of planning it at budget (a
// count >= 1 or a fraction of the running tasks).
func seedProblem(base StateSpec, seed uint64, placer string, opts env.DefragOptions, budget float64) (sim.SnapshotFile, Problem, error) {
	spec := base
	spec.Seed = seed
	snap, err := MakeState(spec)
	if err != nil {
		return snap, Problem{}, fmt.Errorf("seed %d: %w", seed, err)
	}
	pr, err := NewProblem(snap, placer, opts)
	if err != nil {
		return snap, Problem{}, fmt.Errorf("seed %d: %w", seed, err)
	}
	pr.Options.Budget = BudgetFor(budget, pr.Cluster.Running())
	return snap, pr, nil
}

// Compare makes the state of each seed and plans it with every planner at the same budget.
// budget is a count (>= 1) or a fraction of the running tasks.
func Compare(base StateSpec, seeds []uint64, planners []Planner, placer string, opts env.DefragOptions, budget float64, samples int) ([]Row, error) {
	var rows []Row
	for _, seed := range seeds {
		_, pr, err := seedProblem(base, seed, placer, opts, budget)
		if err != nil {
			return nil, err
		}
		for _, planner := range planners {
			plan, err := Best(pr, planner, samples, seed)
			if err != nil {
				return nil, fmt.Errorf("seed %d: %w", seed, err)
			}
			rows = append(rows, Row{Seed: seed, Method: plan.Method, Before: plan.Before, After: plan.After, Wall: plan.WallSeconds})
		}
	}
	return rows, nil
}

// BudgetFor is a budget (a count >= 1, or a fraction of the running tasks, rounded up) as a
// number of migrations.
func BudgetFor(budget float64, running int) int {
	if budget >= 1 {
		return int(budget)
	}
	return int(budget*float64(running) + 0.999999)
}
