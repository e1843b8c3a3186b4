package sim

import (
	"fmt"
	"maps"
	"sync/atomic"
)

// nodeState is a node's mutable part.
type nodeState struct {
	cpuFree, memFree int64
	gpuFree          [MaxGPUsPerNode]int32
	frag             float64
	version          uint64
	tasks            int32
	// classes counts the node's GPU tasks by class: 0 = GPU-sharing, k = k whole GPUs.
	classes [MaxGPUsPerNode + 1]int32
}

// Placement is a running task and where it runs.
type Placement struct {
	Task   Task
	Choice Choice
}

// Cluster is the simulated cluster: static nodes plus their free resources and running tasks.
type Cluster struct {
	nodes       []Node
	nodeTypeBit []uint64
	typeBits    map[string]uint64
	model       *FragModel
	shapeMask   []uint64 // per model shape: allowed GPU type bits

	st     []nodeState
	placed map[string]Placement
	rank   []int32 // tie-break order: lower rank wins among equal scores

	// While snapshots are live, changes to placed are journaled so Restore can undo them.
	journal []undo
	live    []uint64 // serials of live snapshots, oldest first
	serial  uint64

	capCPU, capMem, capGPU    int64
	usedCPU, usedMem, usedGPU int64
	frag                      float64

	clock uint64
	id    uint64
}

var clusterIDs atomic.Uint64

// NewCluster builds an empty cluster. model may be nil, in which case every fragment is 0.
func NewCluster(nodes []Node, model *FragModel) (*Cluster, error) {
	c := &Cluster{
		nodes:       append([]Node(nil), nodes...),
		nodeTypeBit: make([]uint64, len(nodes)),
		typeBits:    map[string]uint64{},
		model:       model,
		st:          make([]nodeState, len(nodes)),
		placed:      map[string]Placement{},
		rank:        make([]int32, len(nodes)),
		id:          clusterIDs.Add(1),
	}
	seen := map[string]int{}
	for i, n := range nodes {
		if j, dup := seen[n.Name]; dup {
			return nil, fmt.Errorf("node %d: duplicate name %q (also node %d)", i, n.Name, j)
		}
		seen[n.Name] = i
		c.rank[i] = int32(i)
		if n.GPUs < 0 || n.GPUs > MaxGPUsPerNode || n.CPU < 0 || n.Mem < 0 {
			return nil, fmt.Errorf("node %q: invalid capacity (cpu %d, memory %d, gpus %d)", n.Name, n.CPU, n.Mem, n.GPUs)
		}
		if n.GPUs > 0 {
			b, ok := c.typeBits[n.GPUType]
			if !ok {
				if len(c.typeBits) == 64 {
					return nil, fmt.Errorf("node %q: more than 64 GPU types", n.Name)
				}
				b = 1 << uint(len(c.typeBits))
				c.typeBits[n.GPUType] = b
			}
			c.nodeTypeBit[i] = b
		}
		s := &c.st[i]
		s.cpuFree, s.memFree = n.CPU, n.Mem
		for g := 0; g < n.GPUs; g++ {
			s.gpuFree[g] = MilliPerGPU
		}
		c.capCPU += n.CPU
		c.capMem += n.Mem
		c.capGPU += int64(n.GPUs) * MilliPerGPU
	}
	if model != nil {
		c.shapeMask = make([]uint64, len(model.Shapes))
		for k, sh := range model.Shapes {
			c.shapeMask[k] = c.typeMask(sh.GPUTypes)
		}
	}
	for i := range c.st {
		c.touch(i)
	}
	return c, nil
}

// typeMask is the set of node GPU-type bits a type list allows (all when the list is empty).
func (c *Cluster) typeMask(types []string) uint64 {
	if len(types) == 0 {
		return ^uint64(0)
	}
	var m uint64
	for _, t := range types {
		m |= c.typeBits[t]
	}
	return m
}

// touch recomputes node i's cached fragment and gives it a new version.
func (c *Cluster) touch(i int) {
	s := &c.st[i]
	f := c.fragOf(i, s.cpuFree, &s.gpuFree)
	c.frag += f - s.frag
	s.frag = f
	c.clock++
	s.version = c.clock
}

// SetTieOrder sets the order in which placers break ties between equally scored nodes: order
// lists every node index once, most preferred first. The default is node order. The FGD
// paper's simulator prefers nodes in a seeded random order (see ShuffledOrder).
func (c *Cluster) SetTieOrder(order []int) error {
	if err := checkTieOrder(order, len(c.nodes)); err != nil {
		return fmt.Errorf("tie order: %w", err)
	}
	rank := make([]int32, len(order)) // new: clones share the old one
	for r, i := range order {
		rank[i] = int32(r)
	}
	c.rank = rank
	return nil
}

// checkTieOrder reports an order that is not a permutation of the n node indices.
func checkTieOrder(order []int, n int) error {
	if len(order) != n {
		return fmt.Errorf("%d entries for %d nodes", len(order), n)
	}
	seen := make([]bool, n)
	for r, i := range order {
		if i < 0 || i >= n || seen[i] {
			return fmt.Errorf("entry %d (node %d) is out of range or repeated", r, i)
		}
		seen[i] = true
	}
	return nil
}

// TieRank is node i's position in the tie-break order (0 = preferred).
func (c *Cluster) TieRank(i int) int { return int(c.rank[i]) }

// TieOrder lists the node indices most preferred first (the inverse of TieRank).
func (c *Cluster) TieOrder() []int {
	order := make([]int, len(c.rank))
	for i, r := range c.rank {
		order[r] = i
	}
	return order
}

// NumNodes is the number of nodes.
func (c *Cluster) NumNodes() int { return len(c.nodes) }

// Node returns node i's static description.
func (c *Cluster) Node(i int) Node { return c.nodes[i] }

// Nodes returns a copy of the static node list.
func (c *Cluster) Nodes() []Node { return append([]Node(nil), c.nodes...) }

// NodeIndex finds a node by name.
func (c *Cluster) NodeIndex(name string) (int, bool) {
	for i := range c.nodes {
		if c.nodes[i].Name == name {
			return i, true
		}
	}
	return 0, false
}

// Model is the fragmentation model the cluster measures with (may be nil).
func (c *Cluster) Model() *FragModel { return c.model }

// ID identifies this Cluster value (a clone gets a new ID), for callers that cache per node.
func (c *Cluster) ID() uint64 { return c.id }

// NodeVersion changes whenever node i's free resources or tasks change.
func (c *Cluster) NodeVersion(i int) uint64 { return c.st[i].version }

// NodeFree is a node's free resources.
type NodeFree struct {
	CPU, Mem int64
	GPUs     int // number of GPUs on the node
	GPU      [MaxGPUsPerNode]int64
}

// TotalGPU is the node's idle GPU milli.
func (f NodeFree) TotalGPU() int64 {
	var t int64
	for g := 0; g < f.GPUs; g++ {
		t += f.GPU[g]
	}
	return t
}

// FullGPUs counts the node's completely free GPUs.
func (f NodeFree) FullGPUs() int {
	n := 0
	for g := 0; g < f.GPUs; g++ {
		if f.GPU[g] == MilliPerGPU {
			n++
		}
	}
	return n
}

// Free returns node i's free resources.
func (c *Cluster) Free(i int) NodeFree {
	s := &c.st[i]
	f := NodeFree{CPU: s.cpuFree, Mem: s.memFree, GPUs: c.nodes[i].GPUs}
	for g := 0; g < f.GPUs; g++ {
		f.GPU[g] = int64(s.gpuFree[g])
	}
	return f
}

// TaskClasses counts node i's running GPU tasks by class: index 0 GPU-sharing tasks, index k
// tasks holding k whole GPUs.
func (c *Cluster) TaskClasses(i int) [MaxGPUsPerNode + 1]int32 { return c.st[i].classes }

// NodeTasks is the number of tasks running on node i.
func (c *Cluster) NodeTasks(i int) int { return int(c.st[i].tasks) }

// NodeFrag is node i's fragment (milli-GPU) under the cluster's model.
func (c *Cluster) NodeFrag(i int) float64 { return c.st[i].frag }

// Placement returns where a running task is.
func (c *Cluster) Placement(name string) (Placement, bool) {
	p, ok := c.placed[name]
	return p, ok
}

// Running is the number of running tasks.
func (c *Cluster) Running() int { return len(c.placed) }

// Placements lists running tasks (in no particular order).
func (c *Cluster) Placements() []Placement {
	out := make([]Placement, 0, len(c.placed))
	for _, p := range c.placed {
		out = append(out, p)
	}
	return out
}

// Place runs task t at ch. It fails, changing nothing, if the task is already running or the
// choice is infeasible.
func (c *Cluster) Place(t Task, ch Choice) error {
	if _, dup := c.placed[t.Name]; dup {
		return fmt.Errorf("place %q: task is already running", t.Name)
	}
	if err := c.Fits(t, ch); err != nil {
		return fmt.Errorf("place %q: %w", t.Name, err)
	}
	c.apply(t, ch, -1)
	c.setPlacement(t.Name, Placement{Task: t, Choice: ch}, true)
	return nil
}

// Remove stops a running task and frees its resources.
func (c *Cluster) Remove(name string) (Placement, error) {
	p, ok := c.placed[name]
	if !ok {
		return Placement{}, fmt.Errorf("remove %q: task is not running", name)
	}
	c.apply(p.Task, p.Choice, +1)
	c.setPlacement(name, Placement{}, false)
	return p, nil
}

// Migrate moves a running task to another node/GPU set (possibly on the same node). The task's
// own resources count as free for the check; on error nothing changes.
func (c *Cluster) Migrate(name string, to Choice) error {
	p, ok := c.placed[name]
	if !ok {
		return fmt.Errorf("migrate %q: task is not running", name)
	}
	if to == p.Choice {
		return fmt.Errorf("migrate %q: target equals the current placement", name)
	}
	c.apply(p.Task, p.Choice, +1)
	if err := c.Fits(p.Task, to); err != nil {
		c.apply(p.Task, p.Choice, -1)
		return fmt.Errorf("migrate %q: %w", name, err)
	}
	c.apply(p.Task, to, -1)
	c.setPlacement(name, Placement{Task: p.Task, Choice: to}, true)
	return nil
}

// apply adds (sign +1, on removal) or takes (sign -1) the task's resources at ch.
func (c *Cluster) apply(t Task, ch Choice, sign int64) {
	if len(c.live) > 0 {
		c.journal = append(c.journal, undo{node: ch.Node, state: c.st[ch.Node]})
	}
	s := &c.st[ch.Node]
	s.cpuFree += sign * t.CPU
	s.memFree += sign * t.Mem
	for g := 0; g < MaxGPUsPerNode; g++ {
		if ch.GPUs.Has(g) {
			s.gpuFree[g] += int32(sign * t.GPUMilli)
		}
	}
	s.tasks -= int32(sign)
	if t.NumGPU > 0 {
		class := t.NumGPU
		if t.Sharing() {
			class = 0
		}
		s.classes[class] -= int32(sign)
	}
	c.usedCPU -= sign * t.CPU
	c.usedMem -= sign * t.Mem
	c.usedGPU -= sign * t.TotalGPUMilli()
	c.touch(ch.Node)
}

// undo reverts one change: a node's state (node >= 0) or a placement-map entry.
type undo struct {
	node  int
	state nodeState
	name  string
	old   Placement
	had   bool
}

// setPlacement changes the placement map, journaling the old value while snapshots are live.
func (c *Cluster) setPlacement(name string, p Placement, present bool) {
	if len(c.live) > 0 {
		old, had := c.placed[name]
		c.journal = append(c.journal, undo{node: -1, name: name, old: old, had: had})
	}
	if present {
		c.placed[name] = p
	} else {
		delete(c.placed, name)
	}
}

// Snapshot is a saved cluster state for Restore: a position in the cluster's journal of
// changes plus the totals, so taking one costs nothing and restoring costs the changes since.
type Snapshot struct {
	id, serial                uint64
	pos                       int
	usedCPU, usedMem, usedGPU int64
	frag                      float64
}

// Snapshot saves the current state for Restore. While a snapshot is live (until it, or one
// taken before it, is restored or discarded) task changes are journaled.
func (c *Cluster) Snapshot() *Snapshot {
	c.serial++
	c.live = append(c.live, c.serial)
	return &Snapshot{id: c.id, serial: c.serial, pos: len(c.journal),
		usedCPU: c.usedCPU, usedMem: c.usedMem, usedGPU: c.usedGPU, frag: c.frag}
}

// liveIndex is the snapshot's position among live snapshots, or -1.
func (c *Cluster) liveIndex(s *Snapshot) int {
	if s.id != c.id {
		return -1
	}
	for k := len(c.live) - 1; k >= 0; k-- {
		if c.live[k] == s.serial {
			return k
		}
	}
	return -1
}

// Restore returns the cluster to a live snapshot taken from it; s stays live (restore again
// at will) and snapshots taken after s are discarded. Restored nodes get new versions.
func (c *Cluster) Restore(s *Snapshot) error {
	k := c.liveIndex(s)
	if k < 0 {
		return fmt.Errorf("restore: snapshot is from another cluster, or was discarded or superseded by restoring an older one")
	}
	for j := len(c.journal) - 1; j >= s.pos; j-- {
		switch u := &c.journal[j]; {
		case u.node >= 0:
			c.st[u.node] = u.state
			c.clock++
			c.st[u.node].version = c.clock
		case u.had:
			c.placed[u.name] = u.old
		default:
			delete(c.placed, u.name)
		}
	}
	c.journal = c.journal[:s.pos]
	c.live = c.live[:k+1]
	c.usedCPU, c.usedMem, c.usedGPU, c.frag = s.usedCPU, s.usedMem, s.usedGPU, s.frag
	return nil
}

// Discard ends a snapshot (and those taken after it) without restoring; once no snapshot is
// live the journal is dropped.
func (c *Cluster) Discard(s *Snapshot) {
	k := c.liveIndex(s)
	if k < 0 {
		return
	}
	c.live = c.live[:k]
	if len(c.live) == 0 {
		c.journal = c.journal[:0]
	}
}

// Clone returns an independent deep copy with a new ID.
func (c *Cluster) Clone() *Cluster {
	d := *c
	d.st = append([]nodeState(nil), c.st...)
	d.placed = maps.Clone(c.placed)
	d.id = clusterIDs.Add(1)
	d.journal, d.live = nil, nil
	return &d
}
