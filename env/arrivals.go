package env

import (
	"github.com/schedrl/schedrl/sim"
)

// Arrivals runs the placement environment over a workload: tasks arrive in order, a task no
// node can host fails (no decision, nothing departs), and the episode ends after the last task.
// This is the episode PPO rolls out and evaluation runs.
type Arrivals struct {
	*Placement
	tasks   []sim.Task
	next    int
	arrived int64
	failed  int
	// FailedMilli is the GPU request (milli) of the tasks that failed so far.
	FailedMilli int64
}

// NewArrivals starts an episode over tasks on c (which it mutates) and advances to the first
// task that has a feasible node.
func NewArrivals(c *sim.Cluster, tasks []sim.Task, opts Options) *Arrivals {
	a := &Arrivals{Placement: NewPlacement(c, opts), tasks: tasks}
	a.advance()
	return a
}

// advance presents the next task that fits somewhere, failing the ones that do not.
func (a *Arrivals) advance() {
	for a.next < len(a.tasks) {
		t := a.tasks[a.next]
		a.next++
		feasible := a.Present(t, a.arrived)
		a.arrived += t.TotalGPUMilli()
		if feasible > 0 {
			return
		}
		a.failed++
		a.FailedMilli += t.TotalGPUMilli()
	}
}

// Step places the pending task and moves to the next decision.
func (a *Arrivals) Step(act Action) (Result, error) {
	r, err := a.Placement.Step(act)
	if err != nil {
		return r, err
	}
	a.advance()
	r.Done = a.Done()
	return r, nil
}

// Failed is the number of tasks that found no feasible node.
func (a *Arrivals) Failed() int { return a.failed }

// Progress is the share of the workload's tasks that have arrived, from 0 to 1.
func (a *Arrivals) Progress() float64 {
	if len(a.tasks) == 0 {
		return 1
	}
	return float64(a.next) / float64(len(a.tasks))
}
