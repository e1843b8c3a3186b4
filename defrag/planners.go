package defrag

import (
	"fmt"
	"slices"
	"strings"

	"github.com/schedrl/schedrl/policy"
)

// planners are the planning methods by name: every defragmentation heuristic of package
// policy (as a Heuristic) and the agents that register themselves (random).
var planners = map[string]func() Planner{}

func registerPlanner(name string, f func() Planner) { planners[name] = f }

func init() {
	for _, name := range policy.Defragmenters() {
		registerPlanner(name, func() Planner {
			d, err := policy.NewDefragmenter(name)
			if err != nil {
				panic(err) // the name came from policy's own list
			}
			return Heuristic{D: d}
		})
	}
}

// Methods lists the planner names NewPlanner knows, sorted.
func Methods() []string {
	out := make([]string, 0, len(planners))
	for name := range planners {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// NewPlanner returns the named planner (case-insensitive).
func NewPlanner(name string) (Planner, error) {
	f, ok := planners[strings.ToLower(name)]
	if !ok {
		return nil, fmt.Errorf("unknown planning method %q (valid: %s)", name, strings.Join(Methods(), ", "))
	}
	return f(), nil
}

// NewPlanners resolves planning method names (see NewPlanner).
func NewPlanners(names []string) ([]Planner, error) {
	var out []Planner
	for _, m := range names {
		p, err := NewPlanner(m)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}
