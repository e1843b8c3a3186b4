// Package podlog turns what a Kubernetes cluster did with its pods into a version-2 decision
// log (docs/decision-log.md, "Logs of a Kubernetes cluster"): a Recorder checks every event
// against a replay of the log so far and writes only what replays, Live records a running
// cluster from informers into rotated, content-addressed files (the extender's --log-dir), and
// Import (import.go) rebuilds a cluster's history from `kubectl get nodes,pods -o json` dumps or
// a live list.
package podlog

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/schedrl/schedrl/kube"
	"github.com/schedrl/schedrl/sim"
)

// Meta keys this package writes into a log header.
const (
	// MetaEpoch is the instant of time 0 (RFC 3339, nanoseconds): event times are seconds since.
	MetaEpoch = "epoch"
	// MetaGPUIndex says where a bind's GPU indices come from.
	MetaGPUIndex = "gpu_index"
)

// GPUIndexRule is the documented rule for a GPU pod bound without the gpu-index annotation
// (kube-scheduler with the NVIDIA device plugin records none): the GPUs of its node that fit it
// most tightly at that point of the log, as kube.Mirror models such a pod.
const GPUIndexRule = "annotation alibabacloud.com/gpu-index; where absent, the tightest-fitting GPUs of the node at that point of the log (sim.Cluster.TightestGPUs)"

// Header is the version-2 header of a cluster's Node objects: nodes in name order (as
// kube.Mirror orders them), the fragment measure's typical shapes when model is given, and
// the seeded tie order when tieSeed is given. Node objects that do not read are errors naming
// the node.
func Header(nodes []corev1.Node, model *sim.FragModel, tieSeed *uint64, meta map[string]string) (sim.LogHeader, error) {
	sorted := slices.Clone(nodes)
	slices.SortFunc(sorted, func(a, b corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	sn := make([]sim.Node, 0, len(sorted))
	for i := range sorted {
		n, err := kube.NodeOf(&sorted[i])
		if err != nil {
			return sim.LogHeader{}, err
		}
		if k := len(sn); k > 0 && sn[k-1].Name == n.Name {
			return sim.LogHeader{}, fmt.Errorf("node %s listed twice", n.Name)
		}
		sn = append(sn, n)
	}
	if len(sn) == 0 {
		return sim.LogHeader{}, errors.New("no Node objects: a decision log needs the cluster's nodes")
	}
	c, err := sim.NewCluster(sn, model)
	if err != nil {
		return sim.LogHeader{}, err
	}
	if tieSeed != nil {
		if err := c.SetTieOrder(sim.SeededTieOrder(len(sn), *tieSeed)); err != nil {
			return sim.LogHeader{}, err
		}
	}
	h := sim.NewLogHeader(c, meta)
	h.Version = sim.LogVersionTimed
	if tieSeed == nil {
		h.TieOrder = nil
	}
	return h, nil
}

// Recorder writes a version-2 decision log of pods, checking each event against a replay
// (sim.Replayer) of the log so far, so that what it writes always replays: an event the
// replay refuses is an error and is not written. Pods are known by UID; a task is named
// namespace/name, and a name used before in the same log gets "#2", "#3", ... (task names
// must be unique over a log).
type Recorder struct {
	lw    *sim.LogWriter
	rep   *sim.Replayer
	epoch time.Time
	seq   int64
	last  float64
	tasks map[string]*entry // by pod UID
	used  map[string]int    // task name -> times used

	// Assigned counts the binds whose GPU indices came from GPUIndexRule.
	Assigned int
}

type entry struct {
	name    string
	running bool
}

// NewRecorder writes h (a version-2 header) to w. Event times are seconds since epoch.
func NewRecorder(w io.Writer, h sim.LogHeader, epoch time.Time) (*Recorder, error) {
	if h.Version != sim.LogVersionTimed {
		return nil, fmt.Errorf("podlog: header version %d, want %d", h.Version, sim.LogVersionTimed)
	}
	rep, err := sim.NewReplayer(h)
	if err != nil {
		return nil, err
	}
	lw, err := sim.NewLogWriter(w, h)
	if err != nil {
		return nil, err
	}
	return &Recorder{lw: lw, rep: rep, epoch: epoch, tasks: map[string]*entry{}, used: map[string]int{}}, nil
}

// Flush writes buffered events through to the writer.
func (r *Recorder) Flush() error { return r.lw.Flush() }

// Cluster is the replayed cluster after the last event written (read only).
func (r *Recorder) Cluster() *sim.Cluster { return r.rep.C }

// Known reports whether the pod (by UID) is in the log and, if so, whether it runs.
func (r *Recorder) Known(uid string) (known, running bool) {
	e, ok := r.tasks[uid]
	if !ok {
		return false, false
	}
	return true, e.running
}

// Task is the task name of a known pod.
func (r *Recorder) Task(uid string) string {
	if e, ok := r.tasks[uid]; ok {
		return e.name
	}
	return ""
}

// seconds is at as a log time; a time before the epoch or before the last event is an error.
func (r *Recorder) seconds(at time.Time, what string) (float64, error) {
	t := at.Sub(r.epoch).Seconds()
	if t < 0 {
		return 0, fmt.Errorf("%s at %s, before the log's epoch %s", what, at.UTC().Format(time.RFC3339Nano), r.epoch.UTC().Format(time.RFC3339Nano))
	}
	if t < r.last {
		return 0, fmt.Errorf("%s at %s (%.3f s), before the previous event (%.3f s): the clock went back", what, at.UTC().Format(time.RFC3339Nano), t, r.last)
	}
	return t, nil
}

// write replays ev and, when the replay accepts it, writes it.
func (r *Recorder) write(ev sim.Event, at float64) error {
	ev.Time = &at
	ev.Seq = r.seq + 1
	if err := r.rep.Apply(ev); err != nil {
		return err
	}
	if err := r.lw.Write(ev); err != nil {
		return err
	}
	r.seq, r.last = ev.Seq, at
	return nil
}

// Arrive logs a pod's arrival with its request.
func (r *Recorder) Arrive(at time.Time, uid, name string, t sim.Task) error {
	if _, ok := r.tasks[uid]; ok {
		return fmt.Errorf("pod %s (uid %s) arrived already", name, uid)
	}
	sec, err := r.seconds(at, "pod "+name+" arrives")
	if err != nil {
		return err
	}
	task := name
	if n := r.used[name]; n > 0 {
		task = name + "#" + strconv.Itoa(n+1)
	}
	q := sim.TaskRecord{CPU: t.CPU, Mem: t.Mem, NumGPU: t.NumGPU, GPUMilli: t.GPUMilli, GPUSpec: t.Spec()}
	if err := r.write(sim.Event{Type: sim.EvArrive, Task: task, Request: &q}, sec); err != nil {
		return fmt.Errorf("pod %s: %w", name, err)
	}
	r.used[name]++
	r.tasks[uid] = &entry{name: task}
	return nil
}

// Bind logs that a waiting pod was bound to node: a scheduling decision (typ sim.EvBind),
// or, for pods already running when the log began, sim.EvStart (state, not a decision). With
// gpus nil the GPUs come from GPUIndexRule.
func (r *Recorder) Bind(at time.Time, uid, node string, gpus *sim.GPUSet, typ string) error {
	e, ok := r.tasks[uid]
	switch {
	case !ok:
		return fmt.Errorf("pod uid %s bound to %s before it arrived", uid, node)
	case e.running:
		return fmt.Errorf("pod %s bound to %s while it runs", e.name, node)
	}
	sec, err := r.seconds(at, "pod "+e.name+" bound")
	if err != nil {
		return err
	}
	i, ok := r.rep.C.NodeIndex(node)
	if !ok {
		return fmt.Errorf("pod %s: bound to node %s, which the log's header does not list", e.name, node)
	}
	set := sim.GPUSet(0)
	if gpus != nil {
		set = *gpus
	} else if t, ok := r.rep.Pending(e.name); ok && t.NumGPU > 0 {
		if set, ok = r.rep.C.TightestGPUs(t, i); !ok {
			return fmt.Errorf("pod %s: bound to node %s without %s, and no GPUs there fit it", e.name, node, kube.AnnotGPUIndex)
		}
		r.Assigned++
	}
	if err := r.write(sim.Event{Type: typ, Task: e.name, Node: node, GPUs: set.Indices()}, sec); err != nil {
		return fmt.Errorf("pod %s: %w", e.name, err)
	}
	e.running = true
	return nil
}

// End logs that a pod left: complete (its containers finished) or delete (removed).
func (r *Recorder) End(at time.Time, uid string, complete bool) error {
	e, ok := r.tasks[uid]
	if !ok {
		return fmt.Errorf("pod uid %s ended before it arrived", uid)
	}
	sec, err := r.seconds(at, "pod "+e.name+" ends")
	if err != nil {
		return err
	}
	typ := sim.EvDelete
	if complete && e.running {
		typ = sim.EvComplete
	}
	if err := r.write(sim.Event{Type: typ, Task: e.name}, sec); err != nil {
		return fmt.Errorf("pod %s: %w", e.name, err)
	}
	delete(r.tasks, uid)
	return nil
}

// Carried is a pod the log holds (waiting or running): what the next file of a rotated log
// begins with.
type Carried struct {
	UID, Task string
	Request   sim.Task
	Running   bool
	Node      string
	GPUs      sim.GPUSet
}

// State lists the pods the log holds, running ones first, each in task name order.
func (r *Recorder) State() []Carried {
	out := make([]Carried, 0, len(r.tasks))
	for uid, e := range r.tasks {
		c := Carried{UID: uid, Task: e.name, Running: e.running}
		if e.running {
			pl, _ := r.rep.C.Placement(e.name)
			c.Request, c.Node, c.GPUs = pl.Task, r.rep.C.Node(pl.Choice.Node).Name, pl.Choice.GPUs
		} else {
			c.Request, _ = r.rep.Pending(e.name)
		}
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b Carried) int {
		if a.Running != b.Running {
			if a.Running {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Task, b.Task)
	})
	return out
}

// GPUs reads a bound pod's gpu-index annotation: nil when absent (GPUIndexRule applies).
func GPUs(pod *corev1.Pod) (*sim.GPUSet, error) {
	s, ok := pod.Annotations[kube.AnnotGPUIndex]
	if !ok {
		return nil, nil
	}
	set, err := kube.ParseGPUIndex(s)
	if err != nil {
		return nil, err
	}
	return &set, nil
}
