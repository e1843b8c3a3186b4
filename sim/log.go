package sim

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
)

// Decision-log schema identifiers (see docs/decision-log.md). Version 1 is the untimed log of
// the arrival protocol (time optional); version 2 is the timed log of the event engine (time
// required and non-decreasing; start, preempt and complete events). Readers take both.
const (
	LogSchema       = "schedrl.decision-log"
	LogVersion      = 1
	LogVersionTimed = 2
)

// Event types of the decision log.
const (
	EvArrive  = "arrive"
	EvBind    = "bind"
	EvFail    = "fail"
	EvMigrate = "migrate"
	EvEvict   = "evict"
	EvDelete  = "delete"
	// Version 2 only.
	EvStart    = "start"
	EvPreempt  = "preempt"
	EvComplete = "complete"
)

// timedOnly reports the event types a version-1 log may not carry.
func timedOnly(typ string) bool { return typ == EvStart || typ == EvPreempt || typ == EvComplete }

// NodeRecord is a node in the log header.
type NodeRecord struct {
	Name  string `json:"name"`
	CPU   int64  `json:"cpu_milli"`
	Mem   int64  `json:"memory_mib"`
	GPUs  int    `json:"gpu"`
	Model string `json:"model,omitempty"`
}

// ShapeRecord is a typical shape in the log header.
type ShapeRecord struct {
	CPU      int64   `json:"cpu_milli"`
	NumGPU   int     `json:"num_gpu"`
	GPUMilli int64   `json:"gpu_milli"`
	GPUSpec  string  `json:"gpu_spec,omitempty"`
	Weight   float64 `json:"weight"`
}

// TaskRecord is a task's request as logged on arrival.
type TaskRecord struct {
	CPU      int64  `json:"cpu_milli"`
	Mem      int64  `json:"memory_mib"`
	NumGPU   int    `json:"num_gpu"`
	GPUMilli int64  `json:"gpu_milli"`
	GPUSpec  string `json:"gpu_spec,omitempty"`
}

// GPUTypeRecord is a GPU type of a cluster logged by type (the DL-job world of package jobs,
// where placement within a type does not change a job's speed): its name and GPU count.
type GPUTypeRecord struct {
	Model string `json:"model"`
	GPUs  int    `json:"gpus"`
}

// LogHeader is the first line of a decision log.
type LogHeader struct {
	Schema  string       `json:"schema"`
	Version int          `json:"version"`
	Type    string       `json:"type"` // "header"
	Nodes   []NodeRecord `json:"nodes"`
	// GPUTypes replaces Nodes in a timed log of a cluster counted by GPU type: its start events
	// name a gpu_type instead of a node, and the job world's replayer checks them
	// (jobs.ReplayLog); sim.Replayer replays node logs only.
	GPUTypes []GPUTypeRecord `json:"gpu_types,omitempty"`
	Shapes   []ShapeRecord   `json:"typical_shapes,omitempty"`
	// TieOrder lists the node indices in the order the scheduler preferred them among equal
	// scores, most preferred first; absent, node order.
	TieOrder []int             `json:"tie_order,omitempty"`
	Meta     map[string]string `json:"meta,omitempty"`
}

// Event is one line after the header.
type Event struct {
	Seq      int64       `json:"seq"`
	Type     string      `json:"type"`
	Time     *float64    `json:"time,omitempty"` // seconds; required in version 2
	Task     string      `json:"task"`
	Request  *TaskRecord `json:"request,omitempty"`
	Node     string      `json:"node,omitempty"`
	GPUs     []int       `json:"gpus,omitempty"`
	FromNode string      `json:"from_node,omitempty"`
	FromGPUs []int       `json:"from_gpus,omitempty"`
	Reason   string      `json:"reason,omitempty"`
	LogProb  *float64    `json:"log_prob,omitempty"` // bind: log-probability of the choice under the logging policy, if it has one
	GPUType  string      `json:"gpu_type,omitempty"` // start in a gpu_types log: the type it runs on (request.num_gpu of them)
}

// NewLogHeader describes a cluster (and its typical shapes) for a log.
func NewLogHeader(c *Cluster, meta map[string]string) LogHeader {
	h := LogHeader{Schema: LogSchema, Version: LogVersion, Type: "header", Meta: meta}
	for _, n := range c.nodes {
		h.Nodes = append(h.Nodes, NodeRecord{Name: n.Name, CPU: n.CPU, Mem: n.Mem, GPUs: n.GPUs, Model: n.GPUType})
	}
	h.TieOrder = c.TieOrder()
	if c.model != nil {
		for _, s := range c.model.Shapes {
			t := Task{GPUTypes: s.GPUTypes}
			h.Shapes = append(h.Shapes, ShapeRecord{CPU: s.CPU, NumGPU: s.NumGPU, GPUMilli: s.GPUMilli, GPUSpec: t.Spec(), Weight: s.Weight})
		}
	}
	return h
}

// NodesOf returns the header's nodes.
func (h LogHeader) NodesOf() []Node {
	out := make([]Node, len(h.Nodes))
	for i, n := range h.Nodes {
		out[i] = Node{Name: n.Name, CPU: n.CPU, Mem: n.Mem, GPUs: n.GPUs, GPUType: n.Model}
	}
	return out
}

// NewCluster builds the header's empty cluster with its tie order, when it has one.
func (h LogHeader) NewCluster() (*Cluster, error) {
	c, err := NewCluster(h.NodesOf(), h.ModelOf())
	if err != nil {
		return nil, err
	}
	if len(h.TieOrder) > 0 {
		if err := c.SetTieOrder(h.TieOrder); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// ModelOf returns the header's typical shapes as a model, or nil when it has none.
func (h LogHeader) ModelOf() *FragModel {
	if len(h.Shapes) == 0 {
		return nil
	}
	m := &FragModel{}
	for _, s := range h.Shapes {
		m.Shapes = append(m.Shapes, Shape{CPU: s.CPU, NumGPU: s.NumGPU, GPUMilli: s.GPUMilli, GPUTypes: splitSpec(s.GPUSpec), Weight: s.Weight})
	}
	return m
}

// LogWriter writes a decision log. A nil *LogWriter discards everything.
type LogWriter struct {
	w     *bufio.Writer
	enc   *json.Encoder
	seq   int64
	timed bool
	now   float64
}

// NewLogWriter writes the header and returns a writer for the events; call Flush at the end.
// A version-2 header makes a timed log: every event carries the clock (SetTime) unless it
// brings its own time.
func NewLogWriter(w io.Writer, h LogHeader) (*LogWriter, error) {
	if h.Version != LogVersion && h.Version != LogVersionTimed {
		return nil, fmt.Errorf("decision log: version %d, want %d or %d", h.Version, LogVersion, LogVersionTimed)
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	lw := &LogWriter{w: bw, enc: json.NewEncoder(bw), timed: h.Version == LogVersionTimed}
	if err := lw.enc.Encode(h); err != nil {
		return nil, fmt.Errorf("decision log: %w", err)
	}
	return lw, nil
}

// SetTime advances a timed log's clock; it may not go back.
func (lw *LogWriter) SetTime(t float64) error {
	if lw == nil {
		return nil
	}
	if t < lw.now {
		return fmt.Errorf("decision log: time %v before %v", t, lw.now)
	}
	lw.now = t
	return nil
}

// Write appends one event, numbering it (and, in a timed log, stamping it with the clock).
func (lw *LogWriter) Write(ev Event) error {
	if lw == nil {
		return nil
	}
	switch {
	case lw.timed && ev.Time == nil:
		now := lw.now
		ev.Time = &now
	case lw.timed && *ev.Time < lw.now:
		return fmt.Errorf("decision log: %s %s at time %v, before the clock (%v)", ev.Type, ev.Task, *ev.Time, lw.now)
	case !lw.timed && timedOnly(ev.Type):
		return fmt.Errorf("decision log: %s events need a version-%d log", ev.Type, LogVersionTimed)
	}
	if lw.timed {
		lw.now = *ev.Time
	}
	lw.seq++
	ev.Seq = lw.seq
	if err := lw.enc.Encode(ev); err != nil {
		return fmt.Errorf("decision log: %w", err)
	}
	return nil
}

// Flush writes buffered events.
func (lw *LogWriter) Flush() error {
	if lw == nil {
		return nil
	}
	return lw.w.Flush()
}

// Arrive logs a task's arrival with its request.
func (lw *LogWriter) Arrive(t Task) error {
	if lw == nil {
		return nil
	}
	r := recordOf(t)
	return lw.Write(Event{Type: EvArrive, Task: t.Name, Request: &r})
}

// Bind logs a placement.
func (lw *LogWriter) Bind(task, node string, gpus GPUSet) error {
	return lw.Write(Event{Type: EvBind, Task: task, Node: node, GPUs: gpus.Indices()})
}

// Fail logs that a task could not be placed.
func (lw *LogWriter) Fail(task, reason string) error {
	return lw.Write(Event{Type: EvFail, Task: task, Reason: reason})
}

// Migrate logs a migration.
func (lw *LogWriter) Migrate(task, fromNode string, from GPUSet, node string, to GPUSet) error {
	return lw.Write(Event{Type: EvMigrate, Task: task, FromNode: fromNode, FromGPUs: from.Indices(), Node: node, GPUs: to.Indices()})
}

// Evict logs that a running task was stopped to be re-placed.
func (lw *LogWriter) Evict(task string) error { return lw.Write(Event{Type: EvEvict, Task: task}) }

// Delete logs that a task finished or was deleted.
func (lw *LogWriter) Delete(task string) error { return lw.Write(Event{Type: EvDelete, Task: task}) }

// Start logs that a waiting task began running at node and gpus (timed logs).
func (lw *LogWriter) Start(task, node string, gpus GPUSet) error {
	return lw.Write(Event{Type: EvStart, Task: task, Node: node, GPUs: gpus.Indices()})
}

// Preempt logs that a running task was stopped by the scheduler and waits again (timed logs).
func (lw *LogWriter) Preempt(task, reason string) error {
	return lw.Write(Event{Type: EvPreempt, Task: task, Reason: reason})
}

// Complete logs that a running task finished its work (timed logs).
func (lw *LogWriter) Complete(task string) error {
	return lw.Write(Event{Type: EvComplete, Task: task})
}
