package online

import (
	"cmp"
	"math/rand/v2"
	"slices"

	"github.com/schedrl/schedrl/defrag"
	"github.com/schedrl/schedrl/sim"
)

// make-room is queue-aware: it looks for the fewest migrations that let the longest-waiting
// GPU task fit a node (moving the tasks off some of that node's GPUs to other nodes, where
// the placer puts them), and plans those; if the oldest cannot be helped within the budget it
// tries the next, up to makeRoomTries waiting tasks.
func init() { register("make-room", func() Planner { return makeRoom{} }) }

const makeRoomTries = 10

type makeRoom struct{}

func (makeRoom) Name() string { return "make-room" }

func (makeRoom) Plan(s Snapshot, budget int, rng *rand.Rand) ([]defrag.Migration, error) {
	c := s.Cluster
	onNode := make([][]sim.Placement, c.NumNodes())
	for _, p := range c.Placements() {
		onNode[p.Choice.Node] = append(onNode[p.Choice.Node], p)
	}
	for _, ps := range onNode { // the same plan whatever the map order of Placements
		slices.SortFunc(ps, func(a, b sim.Placement) int { return cmp.Compare(a.Task.Name, b.Task.Name) })
	}
	tries := 0
	for _, t := range s.Waiting {
		if t.NumGPU == 0 {
			continue
		}
		if tries++; tries > makeRoomTries {
			break
		}
		type option struct {
			node  int
			evict []sim.Placement
		}
		var opts []option
		for _, n := range c.TieOrder() {
			if c.Node(n).GPUs < t.NumGPU || !c.Allowed(t, n) {
				continue
			}
			if _, ok := c.TightestGPUs(t, n); ok {
				return nil, nil // it fits already: the next pass starts it
			}
			if ev, ok := evictions(c, t, n, onNode[n], s.Fixed); ok && len(ev) <= budget {
				opts = append(opts, option{n, ev})
			}
		}
		slices.SortStableFunc(opts, func(a, b option) int { return cmp.Compare(len(a.evict), len(b.evict)) })
		for _, o := range opts {
			if ms, ok := relocate(c, s, t, o.node, o.evict, rng); ok {
				return ms, nil
			}
		}
	}
	return nil, nil
}

// evictions picks the tasks to move off node n so that t's GPUs free up there: for k whole
// GPUs the k GPUs with the fewest tasks (then the least used), for a share the GPU that needs
// the fewest tasks moved, largest first. false when a task to move is fixed (in downtime).
func evictions(c *sim.Cluster, t sim.Task, n int, ps []sim.Placement, fixed func(string) bool) ([]sim.Placement, bool) {
	gpus := c.Node(n).GPUs
	on := make([][]int, gpus) // placements on each GPU
	for k, p := range ps {
		for _, g := range p.Choice.GPUs.Indices() {
			on[g] = append(on[g], k)
		}
	}
	free := c.Free(n)
	pick := map[int]bool{}
	if t.Sharing() {
		best := -1
		var bestSet []int
		for g := range gpus {
			got, set := free.GPU[g], []int(nil)
			byMilli := slices.Clone(on[g])
			slices.SortStableFunc(byMilli, func(a, b int) int { return cmp.Compare(ps[b].Task.GPUMilli, ps[a].Task.GPUMilli) })
			for _, k := range byMilli {
				if got >= t.GPUMilli {
					break
				}
				got += ps[k].Task.GPUMilli
				set = append(set, k)
			}
			if got >= t.GPUMilli && (best < 0 || len(set) < len(bestSet)) {
				best, bestSet = g, set
			}
		}
		if best < 0 {
			return nil, false
		}
		for _, k := range bestSet {
			pick[k] = true
		}
	} else {
		order := make([]int, gpus)
		for g := range order {
			order[g] = g
		}
		slices.SortStableFunc(order, func(a, b int) int {
			return cmp.Or(cmp.Compare(len(on[a]), len(on[b])), cmp.Compare(free.GPU[b], free.GPU[a]))
		})
		for _, g := range order[:t.NumGPU] {
			for _, k := range on[g] {
				pick[k] = true
			}
		}
	}
	var out []sim.Placement
	for k, p := range ps {
		if pick[k] {
			if fixed != nil && fixed(p.Task.Name) {
				return nil, false
			}
			out = append(out, p)
		}
	}
	return out, len(out) > 0
}

// relocate checks on the snapshot's cluster c (restored after) that, with evict moved away, t
// fits n and every evicted task finds another node, and returns the migrations.
func relocate(c *sim.Cluster, s Snapshot, t sim.Task, n int, evict []sim.Placement, rng *rand.Rand) ([]defrag.Migration, bool) {
	snap := c.Snapshot()
	defer func() {
		if c.Restore(snap) == nil {
			c.Discard(snap)
		}
	}()
	cp := c
	for _, p := range evict {
		if _, err := cp.Remove(p.Task.Name); err != nil {
			return nil, false
		}
	}
	set, ok := cp.TightestGPUs(t, n)
	if !ok {
		return nil, false
	}
	hold := t
	hold.Name += "#make-room"
	if cp.Place(hold, sim.Choice{Node: n, GPUs: set}) != nil {
		return nil, false
	}
	var ms []defrag.Migration
	for _, p := range evict {
		ch, ok := placeElsewhere(cp, s.Placer, p.Task, n, rng)
		if !ok || cp.Place(p.Task, ch) != nil {
			return nil, false
		}
		ms = append(ms, defrag.Migration{Task: p.Task.Name, FromNode: c.Node(n).Name, FromGPUs: p.Choice.GPUs.Indices(),
			ToNode: cp.Node(ch.Node).Name, ToGPUs: ch.GPUs.Indices()})
	}
	return ms, true
}
