package defrag

import (
	"fmt"
	"slices"
	"strings"

	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/policy"
	"github.com/schedrl/schedrl/sim"
)

// RandomProblem is a small fragmented cluster for tests over many states: random nodes (a few
// GPU types), random tasks placed with a random placement policy until they stop fitting (the
// failed ones are the pending queue), then random departures; a random budget of 1..15.
func RandomProblem(seed uint64) (Problem, error) {
	rng := sim.RNG(seed, 99)
	types := []string{"A", "B", "C"}
	var nodes []sim.Node
	for i := range 6 + rng.IntN(20) {
		n := sim.Node{Name: fmt.Sprintf("n%02d", i), CPU: int64(16+rng.IntN(80)) * 1000, Mem: int64(64+rng.IntN(256)) * 1024}
		if rng.IntN(8) > 0 {
			n.GPUs = []int{1, 2, 4, 8}[rng.IntN(4)]
			n.GPUType = types[rng.IntN(len(types))]
		}
		nodes = append(nodes, n)
	}
	var tasks []sim.Task
	for k := range 40 + rng.IntN(200) {
		tk := sim.Task{Name: fmt.Sprintf("t%03d", k), CPU: int64(1+rng.IntN(16)) * 1000, Mem: int64(1+rng.IntN(32)) * 1024, Deletion: -1}
		switch r := rng.IntN(10); {
		case r < 5:
			tk.NumGPU, tk.GPUMilli = 1, int64([]int{100, 250, 500, 700}[rng.IntN(4)])
		case r < 8:
			tk.NumGPU, tk.GPUMilli = []int{1, 2, 4, 8}[rng.IntN(4)], 1000
		}
		if tk.NumGPU > 0 && rng.IntN(5) == 0 {
			tk.GPUTypes = []string{types[rng.IntN(len(types))]}
		}
		tasks = append(tasks, tk)
	}
	model, err := sim.TypicalShapes(tasks, 0.95)
	if err != nil {
		return Problem{}, err
	}
	c, err := sim.NewCluster(nodes, model)
	if err != nil {
		return Problem{}, err
	}
	placer, err := policy.NewPlacer(policy.Placers()[rng.IntN(len(policy.Placers()))])
	if err != nil {
		return Problem{}, err
	}
	var pending []sim.Task
	for _, tk := range tasks {
		if ch, ok := placer.Place(c, tk, rng); ok {
			if err := c.Place(tk, ch); err != nil {
				return Problem{}, err
			}
		} else {
			pending = append(pending, tk)
		}
	}
	// Random departures make the free capacity splinter.
	running := c.Placements()
	slices.SortFunc(running, func(a, b sim.Placement) int { return strings.Compare(a.Task.Name, b.Task.Name) })
	for _, p := range running {
		if rng.IntN(4) == 0 {
			if _, err := c.Remove(p.Task.Name); err != nil {
				return Problem{}, err
			}
		}
	}
	fgd, _ := policy.NewPlacer("fgd")
	return Problem{Cluster: c, Pending: pending, Placer: fgd,
		Options: env.DefragOptions{Budget: 1 + rng.IntN(15), RewardFragment: 1, RewardPending: 1, MigrationCost: 0.1}}, nil
}
