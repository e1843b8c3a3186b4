package jobs

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/schedrl/schedrl/sim"
)

// The DL-job world writes a version-2 decision log (docs/decision-log.md) of a cluster counted
// by GPU type: the header lists gpu_types instead of nodes, a job is task "job-<index>"
// (its index in the trace), it arrives with its scale factor as request.num_gpu (whole GPUs)
// and the types it can run on as gpu_spec, starts on a gpu_type, is preempted at a round
// boundary (reason "round"; "failed" before Gavel drops it) and completes when its steps are
// done. Placement within a type does not change speed in this model, so no node is named.

// LogHeader is the header of a log of runs on cluster c.
func LogHeader(c Cluster, meta map[string]string) sim.LogHeader {
	h := sim.LogHeader{Schema: sim.LogSchema, Version: sim.LogVersionTimed, Type: "header", Meta: meta}
	for g := range GPU(NumGPUs) {
		if c.GPUs[g] > 0 {
			h.GPUTypes = append(h.GPUTypes, sim.GPUTypeRecord{Model: logName(g), GPUs: c.GPUs[g]})
		}
	}
	return h
}

func logName(g GPU) string { return strings.ToUpper(g.String()) }

func jobName(idx int) string { return "job-" + strconv.Itoa(idx) }

// Event kinds at one instant, in the order they are written: capacity is freed before it is
// taken.
const (
	logComplete = iota
	logFail
	logArrive
	logPreempt
	logStart
)

type logEvent struct {
	t    float64
	kind int
	idx  int
	ev   sim.Event
}

// jobLog turns a round loop's decisions into log events in time order. Completions and
// arrivals happen between round boundaries, so they wait in pending until the next boundary
// (or the end) writes them sorted by time; a boundary's preemptions and starts follow.
type jobLog struct {
	lw      *sim.LogWriter
	running map[int]GPU
	pending []logEvent
	err     error
}

func newJobLog(lw *sim.LogWriter) *jobLog {
	if lw == nil {
		return nil
	}
	return &jobLog{lw: lw, running: map[int]GPU{}}
}

func (l *jobLog) arrive(j Job, tput [NumGPUs]float64, c Cluster) {
	if l == nil {
		return
	}
	var spec []string
	for g := range GPU(NumGPUs) {
		if tput[g] > 0 && c.GPUs[g] >= j.Type.Scale {
			spec = append(spec, logName(g))
		}
	}
	req := sim.TaskRecord{NumGPU: j.Type.Scale, GPUMilli: 1000, GPUSpec: strings.Join(spec, "|")}
	l.pending = append(l.pending, logEvent{j.Arrival, logArrive, j.Index, sim.Event{Type: sim.EvArrive, Task: jobName(j.Index), Request: &req}})
}

func (l *jobLog) complete(idx int, t float64) {
	if l == nil {
		return
	}
	delete(l.running, idx)
	l.pending = append(l.pending, logEvent{t, logComplete, idx, sim.Event{Type: sim.EvComplete, Task: jobName(idx)}})
}

// fail is a running job Gavel drops after failed rounds: preempted, then dropped.
func (l *jobLog) fail(idx int, t float64, reason string) {
	if l == nil {
		return
	}
	if _, ok := l.running[idx]; ok {
		delete(l.running, idx)
		// It frees its GPUs at the instant's start, as a completion does.
		l.pending = append(l.pending, logEvent{t, logComplete, idx, sim.Event{Type: sim.EvPreempt, Task: jobName(idx), Reason: "failed"}})
	}
	l.pending = append(l.pending, logEvent{t, logFail, idx, sim.Event{Type: sim.EvFail, Task: jobName(idx), Reason: reason}})
}

// boundary writes what happened up to now, then the round's decisions: run maps every job
// that runs in the round starting now to its type. A running job not in run is preempted;
// one in run on another type is preempted and started there.
func (l *jobLog) boundary(now float64, run map[int]GPU) {
	if l == nil {
		return
	}
	l.flush(now)
	var stop, start []int
	for idx, g := range l.running {
		if h, ok := run[idx]; !ok || h != g {
			stop = append(stop, idx)
		}
	}
	for idx, g := range run {
		if h, ok := l.running[idx]; !ok || h != g {
			start = append(start, idx)
		}
	}
	slices.Sort(stop)
	slices.Sort(start)
	for _, idx := range stop {
		delete(l.running, idx)
		l.write(logEvent{now, logPreempt, idx, sim.Event{Type: sim.EvPreempt, Task: jobName(idx), Reason: "round"}})
	}
	for _, idx := range start {
		l.running[idx] = run[idx]
		l.write(logEvent{now, logStart, idx, sim.Event{Type: sim.EvStart, Task: jobName(idx), GPUType: logName(run[idx])}})
	}
}

// flush writes the pending events up to time t in time order (kind, then job index, at one
// instant).
func (l *jobLog) flush(t float64) {
	slices.SortStableFunc(l.pending, func(a, b logEvent) int {
		switch {
		case a.t != b.t:
			return cmpFloat(a.t, b.t)
		case a.kind != b.kind:
			return a.kind - b.kind
		}
		return a.idx - b.idx
	})
	n := 0
	for _, e := range l.pending {
		if e.t > t {
			break
		}
		l.write(e)
		n++
	}
	l.pending = slices.Delete(l.pending, 0, n)
}

func cmpFloat(a, b float64) int {
	if a < b {
		return -1
	}
	return 1
}

func (l *jobLog) write(e logEvent) {
	if l.err != nil {
		return
	}
	t := e.t
	e.ev.Time = &t
	l.err = l.lw.Write(e.ev)
}

// close writes what is still pending and flushes the writer.
func (l *jobLog) close() error {
	if l == nil {
		return nil
	}
	l.flush(math.Inf(1))
	if l.err != nil {
		return l.err
	}
	return l.lw.Flush()
}

// ReplayLog reads a log of GPU types (LogHeader) and applies every event to the cluster it
// names, checking that each job arrives once with a valid request, starts only while waiting,
// on a type its request allows, and that no type is ever over capacity; a preempted job waits
// again, a completed or failed one leaves. It returns the number of events.
func ReplayLog(r io.Reader) (int, error) {
	lr, err := sim.NewLogReader(r)
	if err != nil {
		return 0, err
	}
	if len(lr.Header.GPUTypes) == 0 {
		return 0, errors.New("line 1: header lists no gpu_types (a log of nodes: replay it with sim.Replayer)")
	}
	capacity, used := map[string]int{}, map[string]int{}
	for _, t := range lr.Header.GPUTypes {
		if t.GPUs <= 0 || capacity[t.Model] > 0 {
			return 0, fmt.Errorf("line 1: gpu_types: %q with %d GPUs (want each type once, > 0)", t.Model, t.GPUs)
		}
		capacity[t.Model] = t.GPUs
	}
	type job struct {
		gpus    int
		allowed []string
		on      string // the type it runs on; "" while waiting
	}
	jobs := map[string]*job{}
	n := 0
	for {
		ev, err := lr.Next()
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		n++
		fail := func(format string, a ...any) (int, error) {
			return n, fmt.Errorf("line %d: event %d (%s %s) at %v s: %s", lr.Line(), ev.Seq, ev.Type, ev.Task, *ev.Time, fmt.Sprintf(format, a...))
		}
		j := jobs[ev.Task]
		if ev.Type != sim.EvArrive && j == nil {
			return fail("job never arrived")
		}
		switch ev.Type {
		case sim.EvArrive:
			if j != nil {
				return fail("job already arrived")
			}
			q := ev.Request
			if q == nil || q.NumGPU < 1 || q.GPUMilli != 1000 {
				return fail("request %+v, want whole GPUs (num_gpu >= 1, gpu_milli 1000)", q)
			}
			jobs[ev.Task] = &job{gpus: q.NumGPU, allowed: strings.Split(q.GPUSpec, "|")}
		case sim.EvStart:
			switch {
			case j.on != "":
				return fail("already running on %s", j.on)
			case capacity[ev.GPUType] == 0:
				return fail("unknown gpu_type %q", ev.GPUType)
			case !slices.Contains(j.allowed, ev.GPUType):
				return fail("gpu_type %s not in its request's %v", ev.GPUType, j.allowed)
			case used[ev.GPUType]+j.gpus > capacity[ev.GPUType]:
				return fail("%s over capacity: %d of %d GPUs in use, job needs %d", ev.GPUType, used[ev.GPUType], capacity[ev.GPUType], j.gpus)
			}
			j.on = ev.GPUType
			used[j.on] += j.gpus
		case sim.EvPreempt, sim.EvComplete:
			if j.on == "" {
				return fail("job is not running")
			}
			used[j.on] -= j.gpus
			j.on = ""
			if ev.Type == sim.EvComplete {
				delete(jobs, ev.Task)
			}
		case sim.EvFail:
			if j.on != "" {
				return fail("a running job cannot fail (preempt it first)")
			}
			delete(jobs, ev.Task)
		default:
			return fail("event type not in a job log")
		}
	}
}
