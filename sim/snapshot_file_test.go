package sim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func snapshotCluster(t *testing.T) (*Cluster, []Task) {
	t.Helper()
	nodes := []Node{{Name: "a", CPU: 16000, Mem: 65536, GPUs: 2, GPUType: "V100"}, {Name: "b", CPU: 8000, Mem: 32768, GPUs: 4, GPUType: "T4"}}
	model := &FragModel{Shapes: []Shape{{CPU: 1000, NumGPU: 1, GPUMilli: 500, Weight: 1}}}
	c, err := NewCluster(nodes, model)
	if err != nil {
		t.Fatal(err)
	}
	x := Task{Name: "x", CPU: 2000, Mem: 1024, NumGPU: 1, GPUMilli: 300, GPUTypes: []string{"V100"}, Deletion: -1}
	y := Task{Name: "y", CPU: 1000, Mem: 1024, NumGPU: 2, GPUMilli: 1000, Deletion: -1}
	if err := c.Place(x, Choice{Node: 0, GPUs: NewGPUSet(1)}); err != nil {
		t.Fatal(err)
	}
	if err := c.Place(y, Choice{Node: 1, GPUs: NewGPUSet(0, 2)}); err != nil {
		t.Fatal(err)
	}
	return c, []Task{{Name: "p", CPU: 1000, Mem: 512, NumGPU: 8, GPUMilli: 1000, Deletion: -1}}
}

func TestSnapshotFileRoundTrip(t *testing.T) {
	c, pending := snapshotCluster(t)
	path := filepath.Join(t.TempDir(), "snap.json")
	if err := WriteSnapshotFile(path, NewSnapshotFile(c, pending, map[string]string{"seed": "1"})); err != nil {
		t.Fatal(err)
	}
	_, d, gotPending, err := ReadSnapshotFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if d.ClusterFrag() != c.ClusterFrag() || d.Running() != 2 || len(gotPending) != 1 || gotPending[0].NumGPU != 8 {
		t.Fatalf("round trip: frag %v/%v running %d pending %v", d.ClusterFrag(), c.ClusterFrag(), d.Running(), gotPending)
	}
	for _, name := range []string{"x", "y"} {
		p, _ := c.Placement(name)
		q, ok := d.Placement(name)
		if !ok || p.Choice != q.Choice || p.Task.Spec() != q.Task.Spec() {
			t.Fatalf("%s: %+v became %+v", name, p, q)
		}
	}
}

func TestSnapshotFileBadInput(t *testing.T) {
	c, pending := snapshotCluster(t)
	cases := []struct {
		name string
		edit func(s *SnapshotFile)
		want string
	}{
		{"unknown GPU type", func(s *SnapshotFile) { s.Running[0].GPUSpec = "H100" }, `running[0] task "x": unknown GPU type "H100"`},
		{"unknown GPU type pending", func(s *SnapshotFile) { s.Pending[0].GPUSpec = "A100" }, `pending[0] task "p": unknown GPU type "A100"`},
		{"task on missing node", func(s *SnapshotFile) { s.Running[1].Node = "zz" }, `running[1] task "y": node "zz" does not exist`},
		{"overcommitted node", func(s *SnapshotFile) {
			s.Running[1].Node, s.Running[1].GPUs, s.Running[1].CPU = "a", []int{0, 1}, 15000
		}, `running[1]: place "y": node a: cpu`},
		{"shared GPU over capacity", func(s *SnapshotFile) {
			s.Running[0].GPUMilli = 1000
			s.Running[1].Node, s.Running[1].GPUs = "a", []int{0, 1}
		}, "running[1]"},
		{"missing GPU", func(s *SnapshotFile) { s.Running[0].GPUs = []int{5} }, `GPU 5 does not exist on node "a"`},
		{"duplicate task", func(s *SnapshotFile) { s.Pending[0].Name = "x" }, `pending[0] task "x": duplicate name (also running[0])`},
		{"bad request", func(s *SnapshotFile) { s.Pending[0].GPUMilli = 500 }, "whole-GPU task"},
		{"schema", func(s *SnapshotFile) { s.Version = 2 }, "version 2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := NewSnapshotFile(c, pending, nil)
			tc.edit(&s)
			path := filepath.Join(t.TempDir(), "bad.json")
			if err := WriteSnapshotFile(path, s); err != nil {
				t.Fatal(err)
			}
			_, _, _, err := ReadSnapshotFile(path)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), path) {
				t.Fatalf("got %v, want an error starting with the path and containing %q", err, tc.want)
			}
		})
	}
	t.Run("unknown field", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "bad.json")
		if err := os.WriteFile(path, []byte(`{"schema":"schedrl.cluster-snapshot","version":1,"nodez":[]}`), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, _, _, err := ReadSnapshotFile(path); err == nil || !strings.Contains(err.Error(), "nodez") {
			t.Fatalf("got %v", err)
		}
	})
}
