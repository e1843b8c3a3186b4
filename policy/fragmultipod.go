package policy

import (
	"container/heap"

	"github.com/schedrl/schedrl/sim"
)

// frag-multi-pod: keep taking the currently most fragmented node from a priority queue,
// evict its best victim (the removal that lowers its fragment most), and put the node back
// with its new fragment, until budget tasks are out or no removal helps; then re-place them.
func init() {
	registerDefragger("frag-multi-pod", func() Defragmenter {
		return &evictThenReplace{name: "frag-multi-pod", pick: pickMultiPod}
	})
}

type fragQueue struct {
	c     *sim.Cluster
	nodes []int
}

func (q fragQueue) Len() int { return len(q.nodes) }
func (q fragQueue) Less(a, b int) bool {
	fa, fb := q.c.NodeFrag(q.nodes[a]), q.c.NodeFrag(q.nodes[b])
	return fa > fb || (fa == fb && q.nodes[a] < q.nodes[b])
}
func (q fragQueue) Swap(a, b int) { q.nodes[a], q.nodes[b] = q.nodes[b], q.nodes[a] }
func (q *fragQueue) Push(x any)   { q.nodes = append(q.nodes, x.(int)) }
func (q *fragQueue) Pop() any {
	x := q.nodes[len(q.nodes)-1]
	q.nodes = q.nodes[:len(q.nodes)-1]
	return x
}

func pickMultiPod(c *sim.Cluster, budget int, log *sim.LogWriter) ([]sim.Placement, error) {
	tasks := byNode(c)
	q := &fragQueue{c: c}
	for i := range tasks {
		if len(tasks[i]) > 0 {
			q.nodes = append(q.nodes, i)
		}
	}
	heap.Init(q)
	var victims []sim.Placement
	for len(victims) < budget && q.Len() > 0 {
		i := heap.Pop(q).(int)
		v, ok := bestVictim(c, tasks[i])
		if !ok {
			continue
		}
		if err := evict(c, []sim.Placement{v}, log); err != nil {
			return victims, err
		}
		victims = append(victims, v)
		for k, p := range tasks[i] {
			if p.Task.Name == v.Task.Name {
				tasks[i] = append(tasks[i][:k], tasks[i][k+1:]...)
				break
			}
		}
		if len(tasks[i]) > 0 {
			heap.Push(q, i)
		}
	}
	return victims, nil
}
