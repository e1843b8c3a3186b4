package tasks

import (
	"fmt"
	"slices"
	"strings"

	"github.com/schedrl/schedrl/sim"
)

// Queue is a non-preemptive queue discipline: it holds the waiting tasks and decides which to
// try when the scheduler runs a pass. Tasks are numbered by arrival.
type Queue interface {
	// Add makes task i (request t) wait; it is offered at the next pass.
	Add(i int, t sim.Task)
	// Pass offers the waiting tasks to start, in the discipline's order; start reports
	// whether task i started. freed lists the nodes whose free resources grew since the last
	// pass (some nodes may repeat).
	Pass(c *sim.Cluster, freed []int, start func(i int) bool)
	// Waiting counts the waiting tasks.
	Waiting() int
}

var queues = map[string]func() Queue{}

func registerQueue(name string, f func() Queue) { queues[name] = f }

// Queues lists the queue discipline names.
func Queues() []string {
	out := make([]string, 0, len(queues))
	for k := range queues {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// NewQueue returns the named queue discipline.
func NewQueue(name string) (Queue, error) {
	f, ok := queues[strings.ToLower(name)]
	if !ok {
		return nil, fmt.Errorf("unknown queue discipline %q (valid: %s)", name, strings.Join(Queues(), ", "))
	}
	return f(), nil
}
