package online

import (
	"cmp"
	"math/rand/v2"
	"slices"

	"github.com/schedrl/schedrl/defrag"
	"github.com/schedrl/schedrl/sim"
)

// high-node-utilization is in the manner of the Kubernetes descheduler's HighNodeUtilization
// strategy: nodes whose GPU allocation is under a threshold are under-used, and their tasks are
// evicted so that the scheduler packs them onto other nodes, leaving whole nodes free. Here
// the eviction is a migration and the placer picks the target; the least-used nodes go first,
// a node is emptied entirely or not at all, and only within the budget.
func init() {
	register("high-node-utilization", func() Planner { return highNodeUtil{threshold: 0.5} })
}

type highNodeUtil struct {
	threshold float64 // allocated share of a node's GPUs under which it is under-used
}

func (highNodeUtil) Name() string { return "high-node-utilization" }

func (h highNodeUtil) Plan(s Snapshot, budget int, rng *rand.Rand) ([]defrag.Migration, error) {
	c := s.Cluster
	onNode := make([][]sim.Placement, c.NumNodes())
	for _, p := range c.Placements() {
		onNode[p.Choice.Node] = append(onNode[p.Choice.Node], p)
	}
	alloc := func(n int) float64 {
		f := c.Free(n)
		return 1 - float64(f.TotalGPU())/float64(f.GPUs*sim.MilliPerGPU)
	}
	var under []int
	for _, n := range c.TieOrder() {
		if c.Node(n).GPUs > 0 && len(onNode[n]) > 0 && alloc(n) < h.threshold {
			under = append(under, n)
		}
	}
	slices.SortStableFunc(under, func(a, b int) int { return cmp.Compare(alloc(a), alloc(b)) })
	cp := c.Clone()
	var ms []defrag.Migration
	for _, n := range under {
		ps := onNode[n]
		if len(ms)+len(ps) > budget {
			continue
		}
		slices.SortFunc(ps, func(a, b sim.Placement) int { return cmp.Compare(a.Task.Name, b.Task.Name) })
		if slices.ContainsFunc(ps, func(p sim.Placement) bool { return s.Fixed != nil && s.Fixed(p.Task.Name) }) {
			continue
		}
		snap := cp.Snapshot()
		moved, ok := emptyNode(cp, s, n, ps, rng)
		if !ok {
			err := cp.Restore(snap)
			cp.Discard(snap)
			if err != nil {
				return nil, err
			}
			continue
		}
		cp.Discard(snap)
		ms = append(ms, moved...)
	}
	return ms, nil
}

// emptyNode moves every task of ps off node n on c, the placer choosing other nodes.
func emptyNode(c *sim.Cluster, s Snapshot, n int, ps []sim.Placement, rng *rand.Rand) ([]defrag.Migration, bool) {
	for _, p := range ps {
		if _, err := c.Remove(p.Task.Name); err != nil {
			return nil, false
		}
	}
	var ms []defrag.Migration
	for _, p := range ps {
		ch, ok := placeElsewhere(c, s.Placer, p.Task, n, rng)
		if !ok || c.Place(p.Task, ch) != nil {
			return nil, false
		}
		ms = append(ms, defrag.Migration{Task: p.Task.Name, FromNode: c.Node(n).Name, FromGPUs: p.Choice.GPUs.Indices(),
			ToNode: c.Node(ch.Node).Name, ToGPUs: ch.GPUs.Indices()})
	}
	return ms, true
}
