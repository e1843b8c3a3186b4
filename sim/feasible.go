package sim

import "fmt"

// Allowed reports whether node i's GPU type is allowed for t (always true for CPU-only tasks).
func (c *Cluster) Allowed(t Task, i int) bool {
	return t.NumGPU == 0 || c.nodeTypeBit[i]&c.typeMask(t.GPUTypes) != 0
}

// Fits explains why t cannot run at ch, or returns nil when it can.
func (c *Cluster) Fits(t Task, ch Choice) error {
	if ch.Node < 0 || ch.Node >= len(c.nodes) {
		return fmt.Errorf("node index %d out of range 0..%d", ch.Node, len(c.nodes)-1)
	}
	n, s := &c.nodes[ch.Node], &c.st[ch.Node]
	if err := validRequest(t); err != nil {
		return fmt.Errorf("task has an invalid request: %w", err)
	}
	if s.cpuFree < t.CPU {
		return fmt.Errorf("node %s: cpu %d milli free, task needs %d", n.Name, s.cpuFree, t.CPU)
	}
	if s.memFree < t.Mem {
		return fmt.Errorf("node %s: memory %d MiB free, task needs %d", n.Name, s.memFree, t.Mem)
	}
	if ch.GPUs.Len() != t.NumGPU {
		return fmt.Errorf("node %s: %d GPUs chosen, task needs %d", n.Name, ch.GPUs.Len(), t.NumGPU)
	}
	if t.NumGPU == 0 {
		return nil
	}
	if int(ch.GPUs) >= 1<<uint(n.GPUs) {
		return fmt.Errorf("node %s: GPU set %v includes a GPU that does not exist (node has %d)", n.Name, ch.GPUs, n.GPUs)
	}
	if !c.Allowed(t, ch.Node) {
		return fmt.Errorf("node %s: GPU type %q not allowed (task allows %s)", n.Name, n.GPUType, t.Spec())
	}
	for _, g := range ch.GPUs.Indices() {
		if int64(s.gpuFree[g]) < t.GPUMilli {
			return fmt.Errorf("node %s: GPU %d has %d milli free, task needs %d", n.Name, g, s.gpuFree[g], t.GPUMilli)
		}
	}
	return nil
}

// fitsNode is the fast form of "some GPU set on node i fits t"; tmask = typeMask(t.GPUTypes).
func (c *Cluster) fitsNode(t *Task, tmask uint64, i int) bool {
	s := &c.st[i]
	if s.cpuFree < t.CPU || s.memFree < t.Mem {
		return false
	}
	if t.NumGPU == 0 {
		return true
	}
	if c.nodeTypeBit[i]&tmask == 0 {
		return false
	}
	need := t.NumGPU
	for g := 0; g < c.nodes[i].GPUs; g++ {
		if int64(s.gpuFree[g]) >= t.GPUMilli {
			need--
			if need == 0 {
				return true
			}
		}
	}
	return false
}

// FeasibleNodes appends to buf the nodes where t fits with some GPU set, in node order.
func (c *Cluster) FeasibleNodes(t Task, buf []int) []int {
	tmask := c.typeMask(t.GPUTypes)
	for i := range c.nodes {
		if c.fitsNode(&t, tmask, i) {
			buf = append(buf, i)
		}
	}
	return buf
}

// Candidates appends to buf every feasible choice for t, in node order: for a CPU-only task one
// per node; for a GPU-sharing task one per GPU that has room; for whole-GPU tasks one per node
// using its lowest-indexed free GPUs (free GPUs are interchangeable).
func (c *Cluster) Candidates(t Task, buf []Choice) []Choice {
	tmask := c.typeMask(t.GPUTypes)
	for i := range c.nodes {
		buf = c.nodeCandidates(&t, tmask, i, buf)
	}
	return buf
}

// NodeCandidates appends to buf Candidates' choices on node i alone, for callers that keep
// per-node results while only a few nodes change (see NodeVersion).
func (c *Cluster) NodeCandidates(t Task, i int, buf []Choice) []Choice {
	return c.nodeCandidates(&t, c.typeMask(t.GPUTypes), i, buf)
}

func (c *Cluster) nodeCandidates(t *Task, tmask uint64, i int, buf []Choice) []Choice {
	if !c.fitsNode(t, tmask, i) {
		return buf
	}
	if t.Sharing() {
		s := &c.st[i]
		for g := 0; g < c.nodes[i].GPUs; g++ {
			if int64(s.gpuFree[g]) >= t.GPUMilli {
				buf = append(buf, Choice{Node: i, GPUs: NewGPUSet(g)})
			}
		}
		return buf
	}
	set, _ := c.TightestGPUs(*t, i)
	return append(buf, Choice{Node: i, GPUs: set})
}

// TightestGPUs is the best-fit GPU choice on node i: for a sharing task the GPU with the least
// free milli that still fits (lowest index on ties), for whole-GPU tasks the lowest-indexed
// free GPUs, for CPU-only tasks the empty set. ok is false when nothing fits.
func (c *Cluster) TightestGPUs(t Task, i int) (set GPUSet, ok bool) {
	if !c.fitsNode(&t, c.typeMask(t.GPUTypes), i) {
		return 0, false
	}
	s := &c.st[i]
	if t.Sharing() {
		best := -1
		for g := 0; g < c.nodes[i].GPUs; g++ {
			if f := s.gpuFree[g]; int64(f) >= t.GPUMilli && (best < 0 || f < s.gpuFree[best]) {
				best = g
			}
		}
		return NewGPUSet(best), true
	}
	need := t.NumGPU
	for g := 0; g < c.nodes[i].GPUs && need > 0; g++ {
		if int64(s.gpuFree[g]) >= t.GPUMilli {
			set |= NewGPUSet(g)
			need--
		}
	}
	return set, true
}
