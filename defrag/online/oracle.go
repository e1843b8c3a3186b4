package online

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/schedrl/schedrl/policy"
	"github.com/schedrl/schedrl/sim"
	"github.com/schedrl/schedrl/tasks"
)

// OracleName is the zero-cost repack's method name.
const OracleName = "oracle"

// Oracle is the ceiling of periodic rescheduling: every Every seconds, whatever the queue, it
// repacks all running tasks at once, with no downtime and no budget, keeping node, GPU, CPU
// and memory boundaries. The repack places the tasks on the empty cluster largest GPU request
// first (then CPU, memory, name) with FGD, the measure's own placer, and is applied only when
// it leaves a lower fragment than the live cluster; a repack in which some task finds no room
// is dropped. It is a heuristic repack, not a proven optimum: what a migration policy without
// costs could reach by this route, a reference for how much of the fragment there is to win.
type Oracle struct {
	every float64
	fgd   policy.Placer
	rng   *rand.Rand
	// Invocations counts the checks; Repacks the repacks applied.
	Invocations, Repacks int
}

// NewOracle returns the oracle checking every every seconds; its placer's draws come from seed.
func NewOracle(every float64, seed uint64) (*Oracle, error) {
	if !(every > 0) {
		return nil, fmt.Errorf("every_s: must be > 0 seconds, got %v", every)
	}
	fgd, err := policy.NewPlacer("fgd")
	if err != nil {
		return nil, err
	}
	return &Oracle{every: every, fgd: fgd, rng: sim.RNG(seed, streamDefrag)}, nil
}

// Invoke is tasks.Defragmenter's.
func (o *Oracle) Invoke(v *tasks.View) (float64, error) {
	next := v.Now() + o.every
	o.Invocations++
	c := v.Cluster()
	assign, ok, err := o.repack(c, v.Migrating)
	if err != nil || !ok {
		return next, err
	}
	if _, err := v.Repack(assign); err != nil {
		return 0, fmt.Errorf("oracle: %w", err)
	}
	o.Repacks++
	return next, nil
}

// repack is the new place of every movable running task of c, and whether it lowers the
// fragment; tasks for which fixed holds stay where they are.
func (o *Oracle) repack(c *sim.Cluster, fixed func(string) bool) (map[string]sim.Choice, bool, error) {
	e, err := sim.NewCluster(c.Nodes(), c.Model())
	if err != nil {
		return nil, false, err
	}
	if err := e.SetTieOrder(c.TieOrder()); err != nil {
		return nil, false, err
	}
	var move []sim.Task
	for _, p := range c.Placements() {
		if fixed(p.Task.Name) {
			if err := e.Place(p.Task, p.Choice); err != nil {
				return nil, false, err
			}
			continue
		}
		move = append(move, p.Task)
	}
	slices.SortFunc(move, func(a, b sim.Task) int {
		return cmp.Or(cmp.Compare(b.TotalGPUMilli(), a.TotalGPUMilli()), cmp.Compare(b.CPU, a.CPU),
			cmp.Compare(b.Mem, a.Mem), cmp.Compare(a.Name, b.Name))
	})
	assign := make(map[string]sim.Choice, len(move))
	for _, t := range move {
		ch, ok := o.fgd.Place(e, t, o.rng)
		if !ok {
			return nil, false, nil
		}
		if err := e.Place(t, ch); err != nil {
			return nil, false, err
		}
		assign[t.Name] = ch
	}
	return assign, e.ClusterFrag() < c.ClusterFrag(), nil
}
