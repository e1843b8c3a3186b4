package tasks

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/schedrl/schedrl/engine"
	"github.com/schedrl/schedrl/sim"
)

// Defragmenter is an online defragmenter in the world. The world invokes it at the first
// arrival and then at each time it asks for, after the scheduling pass of that instant; it
// stops asking once every task has arrived and none waits.
type Defragmenter interface {
	// Invoke may migrate running tasks through v; it returns the time of its next invocation
	// (math.Inf(1): none).
	Invoke(v *View) (next float64, err error)
}

// View is what a defragmenter sees of the world during one invocation, and how it migrates.
type View struct {
	w *world
	e *engine.Engine
}

// Now is the invocation's time.
func (v *View) Now() float64 { return v.e.Now() }

// Cluster is the live cluster. It must not be changed (plan on a Clone); a task in downtime
// also holds its target, as a reservation named ReservationName(task).
func (v *View) Cluster() *sim.Cluster { return v.w.c }

// Waiting lists the waiting tasks' arrival indices, oldest first.
func (v *View) Waiting() []int {
	h := &v.w.hook
	k := 0
	for _, i := range h.waiting {
		if !h.started[i] {
			h.waiting[k] = i
			k++
		}
	}
	h.waiting = h.waiting[:k]
	return h.waiting
}

// PendingGPUSeconds is the GPU-time the waiting tasks have asked for while waiting, from the
// first arrival to now (GPU-seconds): what a defragmenter that shortens the queue saves.
func (v *View) PendingGPUSeconds() float64 { return v.w.pendingAll / sim.MilliPerGPU }

// Arrival is arrival i.
func (v *View) Arrival(i int) Arrival { return v.w.res.Arrivals[i] }

// Migrating reports whether the running task is in a migration's downtime, or is a reservation.
func (v *View) Migrating(task string) bool {
	i, ok := v.w.hook.index[task]
	return !ok || v.w.hook.moving[i]
}

// ReservationName is the name under which a migrating task holds its target.
func ReservationName(task string) string { return task + "#migration" }

// Migrate moves running task to ch with downtime seconds: for that long the task holds both
// its old place and its target, makes no progress (it finishes downtime later), and then
// moves, freeing its old place. Downtime 0 moves it at once.
func (v *View) Migrate(task string, to sim.Choice, downtime float64) error {
	w, h := v.w, &v.w.hook
	i, ok := h.index[task]
	p, running := w.c.Placement(task)
	if !ok || !running {
		return fmt.Errorf("migrate %q: task is not running", task)
	}
	if h.moving[i] {
		return fmt.Errorf("migrate %q: task is already migrating", task)
	}
	if !(downtime >= 0) || math.IsInf(downtime, 0) {
		return fmt.Errorf("migrate %q: downtime %v", task, downtime)
	}
	if to.Node == p.Choice.Node {
		return fmt.Errorf("migrate %q: target is its own node", task)
	}
	if downtime == 0 {
		if err := w.c.Migrate(task, to); err != nil {
			return err
		}
		w.moved(v.e, i, p, to)
	} else {
		r := p.Task
		r.Name = ReservationName(task)
		if err := w.c.Place(r, to); err != nil {
			return fmt.Errorf("migrate %q: %w", task, err)
		}
		now := v.e.Now()
		v.e.Cancel(h.done[i])
		w.res.Finish[i] += downtime
		id, err := v.e.At(w.res.Finish[i], engine.Complete, i)
		if err != nil {
			return err
		}
		h.done[i], h.moving[i], h.to[i] = id, true, to
		if _, err := v.e.At(now+downtime, engine.MigrationEnd, i); err != nil {
			return err
		}
	}
	w.res.Migrations++
	w.res.DowntimeS += downtime
	w.res.DowntimeGPUSeconds += downtime * float64(p.Task.TotalGPUMilli()) / sim.MilliPerGPU
	return nil
}

// Repack moves running tasks to the places assign gives them all at once and at no cost (no
// downtime, no budget): every task named leaves its place, then each takes its new one, so a
// repack may swap tasks that no sequence of single migrations could. If a task is not running,
// is migrating, or does not fit, the cluster is left as it was and an error returned. It
// returns the number of tasks that changed place (counted in Result.Migrations). A decision
// log cannot record a simultaneous move, so a logged run refuses it.
func (v *View) Repack(assign map[string]sim.Choice) (int, error) {
	w, h := v.w, &v.w.hook
	if w.log != nil {
		return 0, fmt.Errorf("repack: a decision log cannot record a simultaneous repack")
	}
	names := slices.Sorted(maps.Keys(assign))
	old := make([]sim.Placement, len(names))
	for k, name := range names {
		i, ok := h.index[name]
		p, running := w.c.Placement(name)
		if !ok || !running || h.moving[i] {
			return 0, fmt.Errorf("repack %q: task is not running, or is migrating", name)
		}
		old[k] = p
	}
	snap := w.c.Snapshot()
	defer w.c.Discard(snap)
	for _, name := range names {
		if _, err := w.c.Remove(name); err != nil {
			return 0, errors.Join(err, w.c.Restore(snap))
		}
	}
	for k, name := range names {
		if err := w.c.Place(old[k].Task, assign[name]); err != nil {
			return 0, errors.Join(fmt.Errorf("repack %q: %w", name, err), w.c.Restore(snap))
		}
	}
	moved := 0
	for k, name := range names {
		if to := assign[name]; to != old[k].Choice {
			w.moved(v.e, h.index[name], old[k], to)
			moved++
		}
	}
	w.res.Migrations += moved
	return moved, nil
}

// hookState is the world's bookkeeping for a defragmenter (unused without one).
type hookState struct {
	due     bool
	index   map[string]int // task name -> arrival index
	waiting []int          // arrival order; started ones are dropped lazily
	started []bool
	moving  []bool
	done    []engine.ID // completion events
	to      []sim.Choice
}

func (h *hookState) init(arrivals []Arrival) {
	n := len(arrivals)
	h.index = make(map[string]int, n)
	for i, a := range arrivals {
		h.index[a.Task.Name] = i
	}
	h.started, h.moving = make([]bool, n), make([]bool, n)
	h.done, h.to = make([]engine.ID, n), make([]sim.Choice, n)
}

func (h *hookState) onArrive(i int) {
	if h.index != nil {
		h.waiting = append(h.waiting, i)
	}
}

func (h *hookState) onStart(i int, done engine.ID) {
	if h.index != nil {
		h.started[i], h.done[i] = true, done
	}
}

// invoke runs the defragmenter when a tick is due and schedules its next tick.
func (w *world) invoke(e *engine.Engine) error {
	h := &w.hook
	if !h.due {
		return nil
	}
	h.due = false
	next, err := w.cfg.Defrag.Invoke(&View{w: w, e: e})
	if err != nil {
		return fmt.Errorf("defragmenter: %w", err)
	}
	if e.Now() >= w.res.LastArrival && w.q.Waiting() == 0 || math.IsInf(next, 1) {
		return nil
	}
	if !(next > e.Now()) {
		return fmt.Errorf("defragmenter: next invocation at %v, not after now (%v)", next, e.Now())
	}
	_, err = e.At(next, engine.RoundBoundary, -1)
	return err
}

// endMigration ends task i's downtime: its reservation becomes its place.
func (w *world) endMigration(e *engine.Engine, i int) error {
	h := &w.hook
	name := w.res.Arrivals[i].Task.Name
	if _, err := w.c.Remove(ReservationName(name)); err != nil {
		return err
	}
	p, _ := w.c.Placement(name)
	if err := w.c.Migrate(name, h.to[i]); err != nil {
		return err
	}
	h.moving[i] = false
	w.moved(e, i, p, h.to[i])
	return nil
}

// moved records that task i left p for to: its old node has room for a scheduling pass.
func (w *world) moved(e *engine.Engine, i int, p sim.Placement, to sim.Choice) {
	w.node[i] = to.Node
	w.freed = append(w.freed, p.Choice.Node)
	e.Trigger()
	if w.log != nil && w.err == nil {
		w.err = w.log.Migrate(p.Task.Name, w.c.Node(p.Choice.Node).Name, p.Choice.GPUs, w.c.Node(to.Node).Name, to.GPUs)
	}
}
