// Package engine is schedrl's clock and event queue: a deterministic discrete-event loop that
// the timed worlds (openb tasks, Gavel jobs, online defragmentation) drive. It knows nothing of
// clusters or tasks: an event is a time, a kind and a world-defined subject (a task or job
// index, a node). Events pop in order of time, then kind (the fixed order of the Kind
// constants), then insertion, so equal inputs give equal runs. When the engine has a decision
// log, it keeps the log's clock at the current time, so every logged event carries it.
package engine

import (
	"fmt"
	"math"

	"github.com/schedrl/schedrl/sim"
)

// MaxTime (seconds, about 31.7 years) is the clock's limit: every timed world refuses a time,
// duration or run time beyond it before it starts, so that a step of a millisecond still moves
// the clock and no input makes a run without end. docs/timed.md lists the limits.
const MaxTime = 1e9

// Kind is an event's kind. At equal times events pop in this order: capacity is freed
// (completions, ends of migrations, preemptions) before a round is recomputed, before new work
// arrives, and a trigger (a scheduling pass) comes last, when everything at that instant is in.
type Kind uint8

const (
	Complete Kind = iota
	MigrationEnd
	Preempt
	MigrationStart
	RoundBoundary
	Arrival
	Start
	Trigger
	numKinds
)

var kindNames = [numKinds]string{"complete", "migration-end", "preempt", "migration-start", "round", "arrival", "start", "trigger"}

func (k Kind) String() string {
	if k < numKinds {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// ID identifies a scheduled event (its insertion sequence, from 1).
type ID uint64

// Event is one scheduled happening.
type Event struct {
	Time    float64 // seconds
	Kind    Kind
	Subject int // world-defined: task, job or node index
	ID      ID
}

func (a Event) before(b Event) bool {
	switch {
	case a.Time != b.Time:
		return a.Time < b.Time
	case a.Kind != b.Kind:
		return a.Kind < b.Kind
	default:
		return a.ID < b.ID
	}
}

// Handler reacts to one event; it may schedule more. An error stops the run.
type Handler func(e *Engine, ev Event) error

// Engine is the clock and the queue. The zero value is not ready; use New.
type Engine struct {
	now       float64
	heap      []Event
	seq       ID
	cancelled map[ID]bool
	queued    []uint64 // bit id: event id is in the heap
	trigger   bool     // a trigger is queued at now
	log       *sim.LogWriter
	handled   int64
}

// New returns an engine at time 0. log, when not nil, gets the engine's clock (SetTime) before
// every event is handled.
func New(log *sim.LogWriter) *Engine {
	return &Engine{cancelled: map[ID]bool{}, log: log}
}

// Now is the current time: that of the event being handled, or of the last one.
func (e *Engine) Now() float64 { return e.now }

// Handled counts the events handled so far.
func (e *Engine) Handled() int64 { return e.handled }

// Pending counts the events queued and not cancelled.
func (e *Engine) Pending() int { return len(e.heap) - len(e.cancelled) }

// At schedules an event at time t, which may not be before now.
func (e *Engine) At(t float64, k Kind, subject int) (ID, error) {
	if math.IsNaN(t) || math.IsInf(t, 0) || t < e.now || t > MaxTime {
		return 0, fmt.Errorf("engine: %s of %d at time %v, now %v", k, subject, t, e.now)
	}
	if k >= numKinds {
		return 0, fmt.Errorf("engine: unknown event kind %d", uint8(k))
	}
	e.seq++
	e.push(Event{Time: t, Kind: k, Subject: subject, ID: e.seq})
	return e.seq, nil
}

// After schedules an event d seconds from now (d >= 0).
func (e *Engine) After(d float64, k Kind, subject int) (ID, error) { return e.At(e.now+d, k, subject) }

// Migration schedules a migration's start now and its end downtime seconds later; the world
// moves the subject at the start and resumes it at the end.
func (e *Engine) Migration(subject int, downtime float64) (start, end ID, err error) {
	if downtime < 0 {
		return 0, 0, fmt.Errorf("engine: migration of %d with downtime %v", subject, downtime)
	}
	if start, err = e.At(e.now, MigrationStart, subject); err != nil {
		return 0, 0, err
	}
	end, err = e.At(e.now+downtime, MigrationEnd, subject)
	return start, end, err
}

// Trigger asks for one scheduling pass at the current time, after every other event of this
// instant; asking again before it runs changes nothing.
func (e *Engine) Trigger() {
	if e.trigger {
		return
	}
	e.trigger = true
	e.seq++
	e.push(Event{Time: e.now, Kind: Trigger, Subject: -1, ID: e.seq})
}

// Cancel drops a queued event (e.g. the completion of a task that was preempted). Cancelling
// an event that already popped, or twice, is a no-op.
func (e *Engine) Cancel(id ID) {
	if e.isQueued(id) {
		e.cancelled[id] = true
	}
}

func (e *Engine) isQueued(id ID) bool {
	w := int(id / 64)
	return w < len(e.queued) && e.queued[w]&(1<<(id%64)) != 0
}

// Run handles events in order until none is left or the next is after until (use math.Inf(1)
// for all). The clock stays at the last handled event.
func (e *Engine) Run(until float64, h Handler) error {
	for len(e.heap) > 0 {
		if e.heap[0].Time > until {
			return nil
		}
		ev := e.pop()
		if e.cancelled[ev.ID] {
			delete(e.cancelled, ev.ID)
			continue
		}
		e.now = ev.Time
		if ev.Kind == Trigger {
			e.trigger = false
		}
		if err := e.log.SetTime(e.now); err != nil {
			return err
		}
		e.handled++
		if err := h(e, ev); err != nil {
			return fmt.Errorf("t=%v %s of %d: %w", ev.Time, ev.Kind, ev.Subject, err)
		}
	}
	return nil
}

func (e *Engine) push(ev Event) {
	for int(ev.ID/64) >= len(e.queued) {
		e.queued = append(e.queued, 0)
	}
	e.queued[ev.ID/64] |= 1 << (ev.ID % 64)
	e.heap = append(e.heap, ev)
	i := len(e.heap) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !e.heap[i].before(e.heap[p]) {
			break
		}
		e.heap[i], e.heap[p] = e.heap[p], e.heap[i]
		i = p
	}
}

func (e *Engine) pop() Event {
	h := e.heap
	top := h[0]
	n := len(h) - 1
	h[0] = h[n]
	h = h[:n]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && h[l].before(h[m]) {
			m = l
		}
		if r < n && h[r].before(h[m]) {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	e.heap = h
	e.queued[top.ID/64] &^= 1 << (top.ID % 64)
	return top
}
