package sim

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
)

func splitSpec(spec string) []string {
	var out []string
	for _, s := range strings.Split(spec, "|") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// LogReader reads a decision log line by line.
type LogReader struct {
	sc     *bufio.Scanner
	line   int
	last   float64 // time of the last timed event
	Header LogHeader
}

// NewLogReader reads and checks the header line.
func NewLogReader(r io.Reader) (*LogReader, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<28)
	lr := &LogReader{sc: sc}
	if !sc.Scan() {
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("line 1: %w", err)
		}
		return nil, fmt.Errorf("line 1: empty log, want a header")
	}
	lr.line = 1
	dec := json.NewDecoder(strings.NewReader(sc.Text()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&lr.Header); err != nil {
		return nil, fmt.Errorf("line 1: header: %w", err)
	}
	h := lr.Header
	switch {
	case h.Schema != LogSchema:
		return nil, fmt.Errorf("line 1: schema %q, want %q", h.Schema, LogSchema)
	case h.Version != LogVersion && h.Version != LogVersionTimed:
		return nil, fmt.Errorf("line 1: version %d, this reader knows %d and %d", h.Version, LogVersion, LogVersionTimed)
	case h.Type != "header":
		return nil, fmt.Errorf("line 1: type %q, want \"header\"", h.Type)
	case len(h.Nodes) == 0 && len(h.GPUTypes) == 0:
		return nil, fmt.Errorf("line 1: header lists no nodes")
	case len(h.Nodes) > 0 && len(h.GPUTypes) > 0:
		return nil, fmt.Errorf("line 1: header lists both nodes and gpu_types, want one of them")
	case len(h.GPUTypes) > 0 && h.Version != LogVersionTimed:
		return nil, fmt.Errorf("line 1: a gpu_types log must be version %d", LogVersionTimed)
	}
	if len(h.TieOrder) > 0 {
		if err := checkTieOrder(h.TieOrder, len(h.Nodes)); err != nil {
			return nil, fmt.Errorf("line 1: tie_order: %w", err)
		}
	}
	return lr, nil
}

// Line is the line number of the last line read.
func (lr *LogReader) Line() int { return lr.line }

// Next returns the next event, or io.EOF after the last. In a version-2 log every event must
// carry a time no earlier than the one before; a version-1 log may not carry version-2 types.
func (lr *LogReader) Next() (Event, error) {
	for lr.sc.Scan() {
		lr.line++
		text := strings.TrimSpace(lr.sc.Text())
		if text == "" {
			continue
		}
		var ev Event
		dec := json.NewDecoder(strings.NewReader(text))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&ev); err != nil {
			return Event{}, fmt.Errorf("line %d: %w", lr.line, err)
		}
		if lr.Header.Version == LogVersion {
			if timedOnly(ev.Type) {
				return Event{}, fmt.Errorf("line %d: event type %q needs a version-%d log", lr.line, ev.Type, LogVersionTimed)
			}
			return ev, nil
		}
		switch {
		case ev.Time == nil:
			return Event{}, fmt.Errorf("line %d: event without a time (required in version %d)", lr.line, LogVersionTimed)
		case math.IsNaN(*ev.Time) || *ev.Time < 0:
			return Event{}, fmt.Errorf("line %d: time %v, want a non-negative number", lr.line, *ev.Time)
		case *ev.Time < lr.last:
			return Event{}, fmt.Errorf("line %d: time %v before the previous event's %v", lr.line, *ev.Time, lr.last)
		}
		lr.last = *ev.Time
		return ev, nil
	}
	if err := lr.sc.Err(); err != nil {
		return Event{}, fmt.Errorf("line %d: %w", lr.line+1, err)
	}
	return Event{}, io.EOF
}

// Replayer applies logged events to a cluster, checking each against the cluster state.
type Replayer struct {
	C       *Cluster
	pending map[string]Task // arrived or evicted, not yet bound
	lastSeq int64
	nodeIdx map[string]int
}

// NewReplayer builds the header's cluster (with its typical shapes, when present).
func NewReplayer(h LogHeader) (*Replayer, error) {
	if len(h.GPUTypes) > 0 {
		return nil, errors.New("header: a log of GPU types, not nodes (the DL-job world): replay it with jobs.ReplayLog")
	}
	c, err := h.NewCluster()
	if err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	r := &Replayer{C: c, pending: map[string]Task{}, nodeIdx: map[string]int{}}
	for i, n := range h.Nodes {
		r.nodeIdx[n.Name] = i
	}
	return r, nil
}

// Pending returns an arrived (or evicted) task that is not running yet.
func (r *Replayer) Pending(name string) (Task, bool) {
	t, ok := r.pending[name]
	return t, ok
}

// ChoiceOf resolves a logged node name and GPU list to a Choice.
func (r *Replayer) ChoiceOf(node string, gpus []int) (Choice, error) {
	i, ok := r.nodeIdx[node]
	if !ok {
		return Choice{}, fmt.Errorf("unknown node %q", node)
	}
	var set GPUSet
	for _, g := range gpus {
		if g < 0 || g >= r.C.nodes[i].GPUs {
			return Choice{}, fmt.Errorf("node %s has no GPU %d", node, g)
		}
		if set.Has(g) {
			return Choice{}, fmt.Errorf("GPU %d listed twice", g)
		}
		set |= NewGPUSet(g)
	}
	return Choice{Node: i, GPUs: set}, nil
}

// Apply validates one event against the current state and applies it.
func (r *Replayer) Apply(ev Event) error {
	if ev.Seq <= r.lastSeq {
		return fmt.Errorf("event seq %d after %d: sequence must increase", ev.Seq, r.lastSeq)
	}
	if ev.Task == "" {
		return fmt.Errorf("event %d (%s): empty task name", ev.Seq, ev.Type)
	}
	if ev.GPUType != "" {
		return fmt.Errorf("event %d (%s %s): gpu_type in a log of nodes", ev.Seq, ev.Type, ev.Task)
	}
	if err := r.apply(ev); err != nil {
		return fmt.Errorf("event %d (%s %s): %w", ev.Seq, ev.Type, ev.Task, err)
	}
	r.lastSeq = ev.Seq
	return nil
}

func (r *Replayer) apply(ev Event) error {
	_, running := r.C.placed[ev.Task]
	_, pending := r.pending[ev.Task]
	switch ev.Type {
	case EvArrive:
		if running || pending {
			return errors.New("task already arrived")
		}
		if ev.Request == nil {
			return errors.New("arrive without a request")
		}
		q := ev.Request
		t := Task{Name: ev.Task, CPU: q.CPU, Mem: q.Mem, NumGPU: q.NumGPU, GPUMilli: q.GPUMilli, GPUTypes: splitSpec(q.GPUSpec), Deletion: -1}
		if ev.Time != nil {
			t.Creation = int64(*ev.Time)
		}
		if err := validRequest(t); err != nil {
			return err
		}
		r.pending[ev.Task] = t
	case EvBind, EvStart:
		t, ok := r.pending[ev.Task]
		if !ok {
			return fmt.Errorf("%s of a task that has not arrived (or is already running)", ev.Type)
		}
		ch, err := r.ChoiceOf(ev.Node, ev.GPUs)
		if err != nil {
			return err
		}
		if err := r.C.Place(t, ch); err != nil {
			return err
		}
		delete(r.pending, ev.Task)
	case EvFail:
		if !pending {
			return errors.New("fail of a task that is not waiting")
		}
		delete(r.pending, ev.Task)
	case EvMigrate:
		p, ok := r.C.placed[ev.Task]
		if !ok {
			return errors.New("migrate of a task that is not running")
		}
		from, err := r.ChoiceOf(ev.FromNode, ev.FromGPUs)
		if err != nil {
			return fmt.Errorf("from: %w", err)
		}
		if from != p.Choice {
			return fmt.Errorf("from %s %v, but the task runs on %s %v", ev.FromNode, ev.FromGPUs, r.C.nodes[p.Choice.Node].Name, p.Choice.GPUs)
		}
		to, err := r.ChoiceOf(ev.Node, ev.GPUs)
		if err != nil {
			return err
		}
		return r.C.Migrate(ev.Task, to)
	case EvComplete:
		_, err := r.C.Remove(ev.Task)
		return err
	case EvEvict, EvPreempt:
		p, err := r.C.Remove(ev.Task)
		if err != nil {
			return err
		}
		r.pending[ev.Task] = p.Task
	case EvDelete:
		switch {
		case running:
			_, err := r.C.Remove(ev.Task)
			return err
		case pending:
			delete(r.pending, ev.Task)
		default:
			return errors.New("delete of an unknown task")
		}
	default:
		return fmt.Errorf("unknown event type %q", ev.Type)
	}
	return nil
}

// validRequest checks a task's request the way the trace loader does.
func validRequest(t Task) error {
	switch {
	case t.CPU < 0 || t.Mem < 0:
		return fmt.Errorf("negative cpu or memory request")
	case t.NumGPU < 0 || t.NumGPU > MaxGPUsPerNode:
		return fmt.Errorf("num_gpu %d outside 0..%d", t.NumGPU, MaxGPUsPerNode)
	case t.NumGPU == 0 && t.GPUMilli != 0:
		return fmt.Errorf("gpu_milli %d on a CPU-only task", t.GPUMilli)
	case t.NumGPU > 0 && (t.GPUMilli < 1 || t.GPUMilli > MilliPerGPU):
		return fmt.Errorf("gpu_milli %d outside 1..%d", t.GPUMilli, MilliPerGPU)
	case t.NumGPU > 1 && t.GPUMilli != MilliPerGPU:
		return fmt.Errorf("whole-GPU task with gpu_milli %d", t.GPUMilli)
	}
	return nil
}
