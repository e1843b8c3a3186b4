package tasks

import (
	"container/heap"

	"github.com/schedrl/schedrl/sim"
)

// backfill is FIFO with backfill: waiting tasks are offered in arrival order and one that
// cannot start is skipped, so smaller tasks behind it may start (no reservation). It is
// incremental: waiting tasks are grouped by request, and after a pass no waiting request fits
// anywhere, so a pass only offers the requests that fit a node freed since (or that have just
// arrived). That gives the same starts, in the same order, as rescanning the whole queue.
func init() { registerQueue("backfill", func() Queue { return &backfill{index: map[request]int{}} }) }

// request is the part of a task that decides where it fits.
type request struct {
	cpu, mem, milli int64
	numGPU          int
	spec            string
}

func requestOf(t sim.Task) request {
	return request{cpu: t.CPU, mem: t.Mem, milli: t.GPUMilli, numGPU: t.NumGPU, spec: t.Spec()}
}

type group struct {
	task    sim.Task // one of the group's tasks, for fit checks
	waiting []int    // in arrival order, from head
	head    int
	fresh   bool // a task joined while none was waiting: not yet offered
}

type backfill struct {
	index  map[request]int
	groups []*group
	fresh  []int // groups to offer at the next pass regardless of freed nodes
	n      int
	cand   candidates
}

func (q *backfill) Add(i int, t sim.Task) {
	k, ok := q.index[requestOf(t)]
	if !ok {
		k = len(q.groups)
		q.index[requestOf(t)] = k
		q.groups = append(q.groups, &group{task: t})
	}
	g := q.groups[k]
	if g.head == len(g.waiting) && !g.fresh {
		g.fresh = true
		q.fresh = append(q.fresh, k)
	}
	g.waiting = append(g.waiting, i)
	q.n++
}

func (q *backfill) Waiting() int { return q.n }

// fitsFreed reports whether the group's request fits one of the freed nodes now.
func fitsFreed(c *sim.Cluster, t sim.Task, freed []int) bool {
	for _, n := range freed {
		if _, ok := c.TightestGPUs(t, n); ok {
			return true
		}
	}
	return false
}

func (q *backfill) Pass(c *sim.Cluster, freed []int, start func(int) bool) {
	q.cand = q.cand[:0]
	for _, k := range q.fresh {
		q.cand = append(q.cand, candidate{k, q.groups[k]})
	}
	if len(freed) > 0 {
		for k, g := range q.groups {
			if !g.fresh && g.head < len(g.waiting) && fitsFreed(c, g.task, freed) {
				q.cand = append(q.cand, candidate{k, g})
			}
		}
	}
	q.fresh = q.fresh[:0]
	heap.Init(&q.cand)
	for len(q.cand) > 0 {
		g := q.cand[0].g
		// A fresh group was never offered; any other fits only where capacity was freed, and
		// the starts of this pass may have taken that.
		if !g.fresh && !fitsFreed(c, g.task, freed) || !start(g.waiting[g.head]) {
			g.fresh = false
			heap.Pop(&q.cand)
			continue
		}
		g.head++
		q.n--
		if g.head == len(g.waiting) {
			g.waiting, g.head, g.fresh = g.waiting[:0], 0, false
			heap.Pop(&q.cand)
		} else {
			heap.Fix(&q.cand, 0)
		}
	}
}

type candidate struct {
	k int
	g *group
}

// candidates is a heap of groups by their oldest waiting task.
type candidates []candidate

func (h candidates) Len() int { return len(h) }
func (h candidates) Less(i, j int) bool {
	return h[i].g.waiting[h[i].g.head] < h[j].g.waiting[h[j].g.head]
}
func (h candidates) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *candidates) Push(x any)   { *h = append(*h, x.(candidate)) }
func (h *candidates) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
