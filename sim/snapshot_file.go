package sim

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/schedrl/schedrl/internal/atomicfile"
	"github.com/schedrl/schedrl/internal/inputfile"
)

// Cluster-snapshot file schema (see docs/defrag.md).
const (
	SnapshotSchema  = "schedrl.cluster-snapshot"
	SnapshotVersion = 1
)

// SnapshotFile is a cluster state on disk: the nodes, the fragment measure's typical shapes,
// the running tasks with their GPUs and the queue of pending tasks.
type SnapshotFile struct {
	Schema  string            `json:"schema"`
	Version int               `json:"version"`
	Nodes   []NodeRecord      `json:"nodes"`
	Shapes  []ShapeRecord     `json:"typical_shapes,omitempty"`
	Running []RunningRecord   `json:"running"`
	Pending []PendingRecord   `json:"pending"`
	Meta    map[string]string `json:"meta,omitempty"`
}

// RunningRecord is a running task and where it runs.
type RunningRecord struct {
	Name string `json:"name"`
	TaskRecord
	Node string `json:"node"`
	GPUs []int  `json:"gpus,omitempty"`
}

// PendingRecord is a task waiting in the queue.
type PendingRecord struct {
	Name string `json:"name"`
	TaskRecord
}

func recordOf(t Task) TaskRecord {
	return TaskRecord{CPU: t.CPU, Mem: t.Mem, NumGPU: t.NumGPU, GPUMilli: t.GPUMilli, GPUSpec: t.Spec()}
}

func (r TaskRecord) task(name string) Task {
	return Task{Name: name, CPU: r.CPU, Mem: r.Mem, NumGPU: r.NumGPU, GPUMilli: r.GPUMilli, GPUTypes: splitSpec(r.GPUSpec), Creation: 0, Deletion: -1}
}

// NewSnapshotFile describes c and the pending queue (kept in order); running tasks are listed
// by name so the same state always writes the same file.
func NewSnapshotFile(c *Cluster, pending []Task, meta map[string]string) SnapshotFile {
	h := NewLogHeader(c, nil)
	s := SnapshotFile{Schema: SnapshotSchema, Version: SnapshotVersion, Nodes: h.Nodes, Shapes: h.Shapes,
		Running: []RunningRecord{}, Pending: []PendingRecord{}, Meta: meta}
	ps := c.Placements()
	slices.SortFunc(ps, func(a, b Placement) int { return cmp.Compare(a.Task.Name, b.Task.Name) })
	for _, p := range ps {
		s.Running = append(s.Running, RunningRecord{Name: p.Task.Name, TaskRecord: recordOf(p.Task),
			Node: c.nodes[p.Choice.Node].Name, GPUs: p.Choice.GPUs.Indices()})
	}
	for _, t := range pending {
		s.Pending = append(s.Pending, PendingRecord{Name: t.Name, TaskRecord: recordOf(t)})
	}
	return s
}

// WriteSnapshotFile writes s to path atomically.
func WriteSnapshotFile(path string, s SnapshotFile) error {
	data, err := json.MarshalIndent(s, "", " ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, append(data, '\n'), 0o644)
}

// ReadSnapshotFile reads and checks a snapshot file and builds its cluster and pending queue.
// Errors name the file and the offending entry.
func ReadSnapshotFile(path string) (SnapshotFile, *Cluster, []Task, error) {
	data, err := inputfile.ReadFile(path, inputfile.Table)
	if err != nil {
		return SnapshotFile{}, nil, nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var s SnapshotFile
	if err := dec.Decode(&s); err != nil {
		return s, nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	c, pending, err := s.Build()
	if err != nil {
		return s, nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, c, pending, nil
}

// Build checks the snapshot and returns its cluster (running tasks placed) and pending queue.
func (s SnapshotFile) Build() (*Cluster, []Task, error) {
	if s.Schema != SnapshotSchema || s.Version != SnapshotVersion {
		return nil, nil, fmt.Errorf("schema %q version %d, want %q version %d", s.Schema, s.Version, SnapshotSchema, SnapshotVersion)
	}
	if len(s.Nodes) == 0 {
		return nil, nil, fmt.Errorf("nodes: none")
	}
	c, err := LogHeader{Nodes: s.Nodes, Shapes: s.Shapes}.NewCluster()
	if err != nil {
		return nil, nil, fmt.Errorf("nodes: %w", err)
	}
	names := map[string]string{}
	check := func(where, name string, r TaskRecord) (Task, error) {
		if name == "" {
			return Task{}, fmt.Errorf("%s: task has no name", where)
		}
		if prev, dup := names[name]; dup {
			return Task{}, fmt.Errorf("%s task %q: duplicate name (also %s)", where, name, prev)
		}
		names[name] = where
		t := r.task(name)
		if err := validRequest(t); err != nil {
			return t, fmt.Errorf("%s task %q: %w", where, name, err)
		}
		for _, g := range t.GPUTypes {
			if _, ok := c.typeBits[g]; !ok {
				return t, fmt.Errorf("%s task %q: unknown GPU type %q (no node has it)", where, name, g)
			}
		}
		return t, nil
	}
	for k, r := range s.Running {
		where := fmt.Sprintf("running[%d]", k)
		t, err := check(where, r.Name, r.TaskRecord)
		if err != nil {
			return nil, nil, err
		}
		i, ok := c.NodeIndex(r.Node)
		if !ok {
			return nil, nil, fmt.Errorf("%s task %q: node %q does not exist", where, r.Name, r.Node)
		}
		for _, g := range r.GPUs {
			if g < 0 || g >= c.nodes[i].GPUs {
				return nil, nil, fmt.Errorf("%s task %q: GPU %d does not exist on node %q (it has %d)", where, r.Name, g, r.Node, c.nodes[i].GPUs)
			}
		}
		if err := c.Place(t, Choice{Node: i, GPUs: NewGPUSet(r.GPUs...)}); err != nil {
			return nil, nil, fmt.Errorf("%s: %w (node overcommitted or task misplaced)", where, err)
		}
	}
	pending := make([]Task, 0, len(s.Pending))
	for k, r := range s.Pending {
		t, err := check(fmt.Sprintf("pending[%d]", k), r.Name, r.TaskRecord)
		if err != nil {
			return nil, nil, err
		}
		pending = append(pending, t)
	}
	return c, pending, nil
}
