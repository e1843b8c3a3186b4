package tasks

import "github.com/schedrl/schedrl/sim"

// fifo is strict first-in first-out: the oldest waiting task starts first, and while it cannot
// start nothing behind it may (head-of-line blocking).
func init() { registerQueue("fifo", func() Queue { return &fifo{} }) }

type fifo struct {
	order []int
	head  int
}

func (q *fifo) Add(i int, _ sim.Task) { q.order = append(q.order, i) }

func (q *fifo) Waiting() int { return len(q.order) - q.head }

func (q *fifo) Pass(_ *sim.Cluster, _ []int, start func(int) bool) {
	for q.head < len(q.order) && start(q.order[q.head]) {
		q.head++
	}
	if q.head > len(q.order)/2 { // keep the slice from growing without bound
		q.order = append(q.order[:0], q.order[q.head:]...)
		q.head = 0
	}
}
