package policy

import (
	"math/rand/v2"

	"github.com/schedrl/schedrl/sim"
)

// greedy: each step makes the single migration (a running task to a feasible node/GPU set on
// another node) that lowers the cluster fragment the most, until budget migrations are made or
// no migration lowers it. Moves between GPUs of the same node are not considered. It does not
// use the placement policy.
//
// A step's cost is finding each task shape's best destination and each task's fragment without
// it. Both depend on one node alone: each shape keeps its best choice per node and a max tree
// over them, and a migration, which changes two nodes, updates two leaves of each tree. Nodes in
// the same state (many are empty or full) score alike, so a shape scores each state once.
func init() {
	registerDefragger("greedy", func() Defragmenter { return &greedy{} })
}

type greedy struct {
	cluster uint64 // the ID of the cluster the shapes' nodes were scored on
	shapes  map[taskShape]*shapeTargets
	states  map[nodeState]int32 // the node states seen on this cluster, numbered
	nodes   []stateAt           // each node's state number, by its version
	cands   []sim.Choice
}

// maxStates bounds the node states kept while plans run on one cluster (a plan on the whole
// openb cluster sees about 1,400; every shape keeps a score per state).
const maxStates = 1 << 13

// nodeState is what a node's choices and their gains depend on.
type nodeState struct {
	free    sim.NodeFree
	gpuType string
}

type stateAt struct {
	version uint64
	scored  bool
	state   int32
}

func (*greedy) Name() string { return "greedy" }

// taskShape identifies tasks that fit and score alike as migration sources.
type taskShape struct {
	cpu, mem, milli int64
	numGPU          int
	spec            string
}

// shapeTargets is a task shape's best choice on every node and a max tree over them.
type shapeTargets struct {
	task    sim.Task // a task of the shape: the one its choices are scored for
	nodes   []shapeOnNode
	states  []shapeOnNode // the best choice per node state (the choice's node is the first seen)
	tree    []int32       // tree[k] is the best node under k (-1: none); leaves from len(nodes)
	current bool          // the tree holds the nodes as they are now
}

// shapeOnNode is a task shape's best choice on one node (the first of the highest gain, in
// Candidates' order), valid while the node's version is unchanged.
type shapeOnNode struct {
	version uint64
	scored  bool
	ch      sim.Choice
	gain    float64
	has     bool
}

// above orders nodes by gain; between equal gains the lower node index wins, as a scan in
// node order would pick.
func (st *shapeTargets) above(a, b int32) bool {
	if a < 0 || !st.nodes[a].has {
		return false
	}
	if b < 0 || !st.nodes[b].has {
		return true
	}
	ga, gb := st.nodes[a].gain, st.nodes[b].gain
	return ga > gb || (ga == gb && a < b)
}

func (st *shapeTargets) pick(a, b int32) int32 {
	if st.above(b, a) {
		return b
	}
	return a
}

func (st *shapeTargets) build() {
	n := len(st.nodes)
	st.tree = make([]int32, 2*n)
	for i := range n {
		st.tree[n+i] = int32(i)
	}
	for k := n - 1; k > 0; k-- {
		st.tree[k] = st.pick(st.tree[2*k], st.tree[2*k+1])
	}
}

func (st *shapeTargets) update(i int) {
	for k := (len(st.nodes) + i) / 2; k > 0; k /= 2 {
		st.tree[k] = st.pick(st.tree[2*k], st.tree[2*k+1])
	}
}

// best is the best node in [lo, hi) (-1: none).
func (st *shapeTargets) best(lo, hi int) int32 {
	out := int32(-1)
	n := len(st.nodes)
	for lo, hi = lo+n, hi+n; lo < hi; lo, hi = lo/2, hi/2 {
		if lo&1 == 1 {
			out = st.pick(out, st.tree[lo])
			lo++
		}
		if hi&1 == 1 {
			hi--
			out = st.pick(out, st.tree[hi])
		}
	}
	return out
}

// target is the shape's best destination for a task on node from: the best node, or the best
// of the others when that is from.
func (st *shapeTargets) target(from int) (sim.Choice, float64, bool) {
	b := st.tree[1]
	if b == int32(from) {
		b = st.pick(st.best(0, from), st.best(from+1, len(st.nodes)))
	}
	if b < 0 || !st.nodes[b].has {
		return sim.Choice{}, 0, false
	}
	return st.nodes[b].ch, st.nodes[b].gain, true
}

// score brings node i's best choice for st up to date.
func (g *greedy) score(c *sim.Cluster, st *shapeTargets, i int) {
	nb := &st.nodes[i]
	v := c.NodeVersion(i)
	if nb.scored && nb.version == v {
		return
	}
	k := g.state(c, i)
	for int(k) >= len(st.states) {
		st.states = append(st.states, shapeOnNode{})
	}
	if known := st.states[k]; known.scored {
		known.ch.Node, known.version = i, v
		*nb = known
		return
	}
	*nb = shapeOnNode{version: v, scored: true}
	g.cands = c.NodeCandidates(st.task, i, g.cands[:0])
	for _, ch := range g.cands {
		if gain := -c.FragDelta(st.task, ch); !nb.has || gain > nb.gain {
			nb.ch, nb.gain, nb.has = ch, gain, true
		}
	}
	st.states[k] = *nb
}

// state is node i's state number.
func (g *greedy) state(c *sim.Cluster, i int) int32 {
	at := &g.nodes[i]
	if v := c.NodeVersion(i); !at.scored || at.version != v {
		key := nodeState{c.Free(i), c.Node(i).GPUType}
		k, ok := g.states[key]
		if !ok {
			k = int32(len(g.states))
			g.states[key] = k
		}
		*at = stateAt{version: v, scored: true, state: k}
	}
	return at.state
}

// shape is t's shape with its tree up to date.
func (g *greedy) shape(c *sim.Cluster, t sim.Task) *shapeTargets {
	k := taskShape{t.CPU, t.Mem, t.GPUMilli, t.NumGPU, t.Spec()}
	st, ok := g.shapes[k]
	if !ok {
		st = &shapeTargets{task: t, nodes: make([]shapeOnNode, c.NumNodes())}
		g.shapes[k] = st
	}
	if !st.current {
		for i := range st.nodes {
			g.score(c, st, i)
		}
		st.build()
		st.current = true
	}
	return st
}

// running is a task of the plan: where it is, its shape, and its node's fragment without it
// while the node's version is unchanged.
type running struct {
	p       sim.Placement
	st      *shapeTargets
	version uint64
	scored  bool
	without float64
}

func (r *running) fragWithout(c *sim.Cluster) float64 {
	if v := c.NodeVersion(r.p.Choice.Node); !r.scored || r.version != v {
		r.without, _ = c.FragWithout(r.p.Task.Name)
		r.version, r.scored = v, true
	}
	return r.without
}

func (g *greedy) Defrag(c *sim.Cluster, _ Placer, budget int, _ *rand.Rand, log *sim.LogWriter) ([]Move, error) {
	if g.shapes == nil || g.cluster != c.ID() || len(g.states) > maxStates {
		g.cluster, g.shapes, g.nodes = c.ID(), map[taskShape]*shapeTargets{}, make([]stateAt, c.NumNodes())
		g.states = map[nodeState]int32{}
	}
	// The cluster may have changed since the last plan: every tree is checked node by node.
	for _, st := range g.shapes {
		st.current = false
	}
	var tasks []running
	for _, p := range c.Placements() {
		tasks = append(tasks, running{p: p, st: g.shape(c, p.Task)})
	}
	var moves []Move
	for len(moves) < budget {
		var bestMove Move
		moved := -1
		bestGain := 1e-9
		for k := range tasks {
			r := &tasks[k]
			p := r.p
			to, gain, ok := r.st.target(p.Choice.Node)
			if !ok {
				continue
			}
			// The source node's fragment cannot fall below 0, so a move whose bound is below
			// the best so far needs no FragWithout.
			if gain+c.NodeFrag(p.Choice.Node) < bestGain {
				continue
			}
			total := gain + c.NodeFrag(p.Choice.Node) - r.fragWithout(c)
			if total > bestGain || (total == bestGain && bestMove.Task != "" && p.Task.Name < bestMove.Task) {
				bestGain, bestMove, moved = total, Move{Task: p.Task.Name, From: p.Choice, To: to}, k
			}
		}
		if bestMove.Task == "" {
			break
		}
		if err := c.Migrate(bestMove.Task, bestMove.To); err != nil {
			return moves, err
		}
		if err := log.Migrate(bestMove.Task, c.Node(bestMove.From.Node).Name, bestMove.From.GPUs, c.Node(bestMove.To.Node).Name, bestMove.To.GPUs); err != nil {
			return moves, err
		}
		moves = append(moves, bestMove)
		tasks[moved].p.Choice = bestMove.To
		for _, st := range g.shapes {
			if !st.current {
				continue
			}
			for _, i := range []int{bestMove.From.Node, bestMove.To.Node} {
				g.score(c, st, i)
				st.update(i)
			}
		}
	}
	return moves, nil
}
