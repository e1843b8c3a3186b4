package policy

import (
	"cmp"
	"math/rand/v2"
	"slices"

	"github.com/schedrl/schedrl/sim"
)

// byNode groups running tasks by node, each group sorted by task name for determinism.
func byNode(c *sim.Cluster) [][]sim.Placement {
	out := make([][]sim.Placement, c.NumNodes())
	for _, p := range c.Placements() {
		out[p.Choice.Node] = append(out[p.Choice.Node], p)
	}
	for _, ps := range out {
		slices.SortFunc(ps, func(a, b sim.Placement) int { return cmp.Compare(a.Task.Name, b.Task.Name) })
	}
	return out
}

// nodesByFragment lists nodes in decreasing fragment (node order on ties).
func nodesByFragment(c *sim.Cluster) []int {
	nodes := make([]int, c.NumNodes())
	for i := range nodes {
		nodes[i] = i
	}
	slices.SortStableFunc(nodes, func(a, b int) int { return cmp.Compare(c.NodeFrag(b), c.NodeFrag(a)) })
	return nodes
}

// bestVictim is the task on the list whose removal lowers its node's fragment the most; ok is
// false when no removal lowers it.
func bestVictim(c *sim.Cluster, tasks []sim.Placement) (sim.Placement, bool) {
	var best sim.Placement
	gain, found := 0.0, false
	for _, p := range tasks {
		without, _ := c.FragWithout(p.Task.Name)
		if g := c.NodeFrag(p.Choice.Node) - without; g > gain {
			best, gain, found = p, g, true
		}
	}
	return best, found
}

// evict removes the victims (already chosen) and logs them.
func evict(c *sim.Cluster, victims []sim.Placement, log *sim.LogWriter) error {
	for _, v := range victims {
		if _, err := c.Remove(v.Task.Name); err != nil {
			return err
		}
		if err := log.Evict(v.Task.Name); err != nil {
			return err
		}
	}
	return nil
}

// replace puts evicted tasks back with placer, in eviction order; a task that fits nowhere
// stays out (To.Node = -1) and is logged as failed.
func replace(c *sim.Cluster, placer Placer, victims []sim.Placement, rng *rand.Rand, log *sim.LogWriter) ([]Move, error) {
	moves := make([]Move, 0, len(victims))
	for _, v := range victims {
		ch, ok := placer.Place(c, v.Task, rng)
		if !ok {
			moves = append(moves, Move{Task: v.Task.Name, From: v.Choice, To: sim.Choice{Node: -1}})
			if err := log.Fail(v.Task.Name, "no feasible node after eviction"); err != nil {
				return moves, err
			}
			continue
		}
		if err := c.Place(v.Task, ch); err != nil {
			return moves, err
		}
		moves = append(moves, Move{Task: v.Task.Name, From: v.Choice, To: ch})
		if err := log.Bind(v.Task.Name, c.Node(ch.Node).Name, ch.GPUs); err != nil {
			return moves, err
		}
	}
	return moves, nil
}

// evictThenReplace is the shape of the paper's descheduling baselines: choose victims with
// pick (which may evict as it goes), then re-place all of them.
type evictThenReplace struct {
	name string
	pick func(c *sim.Cluster, budget int, log *sim.LogWriter) ([]sim.Placement, error)
}

func (d *evictThenReplace) Name() string { return d.name }

func (d *evictThenReplace) Defrag(c *sim.Cluster, placer Placer, budget int, rng *rand.Rand, log *sim.LogWriter) ([]Move, error) {
	victims, err := d.pick(c, budget, log)
	if err != nil {
		return nil, err
	}
	return replace(c, placer, victims, rng, log)
}
