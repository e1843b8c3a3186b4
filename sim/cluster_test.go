package sim

import (
	"maps"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func testNodes() []Node {
	return []Node{
		{Name: "t4", CPU: 16000, Mem: 64000, GPUs: 2, GPUType: "T4"},
		{Name: "v100", CPU: 32000, Mem: 128000, GPUs: 4, GPUType: "V100"},
		{Name: "cpu", CPU: 8000, Mem: 32000},
	}
}

func testModel() *FragModel {
	return &FragModel{Shapes: []Shape{
		{CPU: 1000, NumGPU: 1, GPUMilli: 500, Weight: 0.5},
		{CPU: 1000, NumGPU: 1, GPUMilli: 1000, Weight: 0.3},
		{CPU: 2000, Weight: 0.2},
	}}
}

func mustCluster(t *testing.T, nodes []Node, m *FragModel) *Cluster {
	t.Helper()
	c, err := NewCluster(nodes, m)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// checkConservation verifies free + allocated = capacity on every node and GPU, the maintained
// totals, and the cached fragments against a from-scratch computation.
func checkConservation(t *testing.T, c *Cluster) {
	t.Helper()
	type alloc struct {
		cpu, mem int64
		gpu      [MaxGPUsPerNode]int64
	}
	per := make([]alloc, c.NumNodes())
	var cpu, mem, gpu int64
	for _, p := range c.Placements() {
		a := &per[p.Choice.Node]
		a.cpu += p.Task.CPU
		a.mem += p.Task.Mem
		for _, g := range p.Choice.GPUs.Indices() {
			a.gpu[g] += p.Task.GPUMilli
		}
		cpu, mem, gpu = cpu+p.Task.CPU, mem+p.Task.Mem, gpu+p.Task.TotalGPUMilli()
	}
	frag := 0.0
	for i := 0; i < c.NumNodes(); i++ {
		n, f := c.Node(i), c.Free(i)
		if f.CPU+per[i].cpu != n.CPU || f.Mem+per[i].mem != n.Mem {
			t.Fatalf("node %s: cpu %d+%d != %d or mem %d+%d != %d", n.Name, f.CPU, per[i].cpu, n.CPU, f.Mem, per[i].mem, n.Mem)
		}
		for g := 0; g < n.GPUs; g++ {
			if f.GPU[g]+per[i].gpu[g] != MilliPerGPU || f.GPU[g] < 0 {
				t.Fatalf("node %s GPU %d: free %d + allocated %d != %d", n.Name, g, f.GPU[g], per[i].gpu[g], MilliPerGPU)
			}
		}
		want := c.fragOf(i, c.st[i].cpuFree, &c.st[i].gpuFree)
		if math.Abs(c.NodeFrag(i)-want) > 1e-9 {
			t.Fatalf("node %s: cached fragment %v, recomputed %v", n.Name, c.NodeFrag(i), want)
		}
		frag += want
	}
	if uc, um, ug := c.Used(); uc != cpu || um != mem || ug != gpu {
		t.Fatalf("totals cpu %d mem %d gpu %d, placements sum to %d %d %d", uc, um, ug, cpu, mem, gpu)
	}
	if math.Abs(c.ClusterFrag()-frag) > 1e-6 {
		t.Fatalf("cluster fragment %v, nodes sum to %v", c.ClusterFrag(), frag)
	}
}

func randomTask(rng *rand.Rand, k int) Task {
	t := Task{Name: "t" + string(rune('a'+k%26)) + strings.Repeat("x", k/26), CPU: int64(rng.IntN(5)) * 1000, Mem: int64(rng.IntN(4)) * 4000}
	switch rng.IntN(4) {
	case 0:
	case 1:
		t.NumGPU, t.GPUMilli = 1, int64(1+rng.IntN(999))
	case 2:
		t.NumGPU, t.GPUMilli = 1, MilliPerGPU
	default:
		t.NumGPU, t.GPUMilli = 2, MilliPerGPU
	}
	if rng.IntN(5) == 0 {
		t.GPUTypes = []string{"V100"}
	}
	return t
}

func TestConservationUnderRandomOperations(t *testing.T) {
	c := mustCluster(t, testNodes(), testModel())
	rng := rand.New(rand.NewPCG(1, 2))
	var buf []Choice
	type saved struct {
		s       *Snapshot
		m       Metrics
		running map[string]Placement
	}
	var snaps []saved
	for k := 0; k < 3000; k++ {
		if rng.IntN(20) == 0 {
			snaps = append(snaps, saved{c.Snapshot(), c.Metrics(), maps.Clone(c.placed)})
		}
		if len(snaps) > 0 && rng.IntN(25) == 0 {
			j := rng.IntN(len(snaps))
			if err := c.Restore(snaps[j].s); err != nil {
				t.Fatal(err)
			}
			if c.Metrics() != snaps[j].m || !maps.EqualFunc(c.placed, snaps[j].running, func(a, b Placement) bool { return a.Choice == b.Choice && a.Task.Name == b.Task.Name }) {
				t.Fatalf("step %d: restore did not bring back the snapshot's state", k)
			}
			snaps = snaps[:j+1]
			checkConservation(t, c)
		}
		switch running := c.Placements(); {
		case len(running) > 0 && rng.IntN(3) == 0:
			if _, err := c.Remove(running[rng.IntN(len(running))].Task.Name); err != nil {
				t.Fatal(err)
			}
		case len(running) > 0 && rng.IntN(3) == 0:
			p := running[rng.IntN(len(running))]
			buf = c.Candidates(p.Task, buf[:0])
			if len(buf) > 0 {
				to := buf[rng.IntN(len(buf))]
				before, _, _ := c.Used()
				if err := c.Migrate(p.Task.Name, to); err == nil {
					if after, _, _ := c.Used(); after != before {
						t.Fatalf("migration changed allocated CPU %d -> %d", before, after)
					}
				}
			}
		default:
			task := randomTask(rng, k)
			buf = c.Candidates(task, buf[:0])
			if len(buf) == 0 {
				continue
			}
			if err := c.Place(task, buf[rng.IntN(len(buf))]); err != nil {
				t.Fatalf("candidate rejected: %v", err)
			}
		}
		checkConservation(t, c)
	}
}

func TestInfeasiblePlacementsAreRejected(t *testing.T) {
	share := Task{Name: "s", CPU: 1000, Mem: 1000, NumGPU: 1, GPUMilli: 600}
	cases := []struct {
		name string
		task Task
		ch   Choice
		want string
	}{
		{"node out of range", share, Choice{Node: 7, GPUs: NewGPUSet(0)}, "out of range"},
		{"cpu", Task{Name: "c", CPU: 17000}, Choice{Node: 0}, "cpu"},
		{"memory", Task{Name: "m", Mem: 65000}, Choice{Node: 0}, "memory"},
		{"gpu count", share, Choice{Node: 0}, "GPUs chosen"},
		{"two gpus for one", share, Choice{Node: 0, GPUs: NewGPUSet(0, 1)}, "GPUs chosen"},
		{"gpu type", Task{Name: "ty", NumGPU: 1, GPUMilli: 1000, GPUTypes: []string{"V100"}}, Choice{Node: 0, GPUs: NewGPUSet(0)}, "not allowed"},
		{"no such gpu", share, Choice{Node: 0, GPUs: NewGPUSet(3)}, "does not exist"},
		{"gpu on a cpu node", share, Choice{Node: 2, GPUs: NewGPUSet(0)}, "does not exist"},
		{"share too big for the gpu", share, Choice{Node: 0, GPUs: NewGPUSet(0)}, "milli free"},
		{"whole gpu partly used", Task{Name: "w", NumGPU: 1, GPUMilli: 1000}, Choice{Node: 0, GPUs: NewGPUSet(0)}, "milli free"},
		{"invalid request", Task{Name: "bad", NumGPU: 2, GPUMilli: 500}, Choice{Node: 1, GPUs: NewGPUSet(0, 1)}, "invalid request"},
		{"already running", Task{Name: "first", NumGPU: 1, GPUMilli: 500}, Choice{Node: 1, GPUs: NewGPUSet(0)}, "already running"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := mustCluster(t, testNodes(), testModel())
			if err := c.Place(Task{Name: "first", NumGPU: 1, GPUMilli: 500}, Choice{Node: 0, GPUs: NewGPUSet(0)}); err != nil {
				t.Fatal(err)
			}
			before := append([]nodeState(nil), c.st...)
			err := c.Place(tc.task, tc.ch)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Place = %v, want an error mentioning %q", err, tc.want)
			}
			for i := range c.st {
				if c.st[i] != before[i] {
					t.Fatalf("node %d changed by a rejected placement", i)
				}
			}
			if c.Running() != 1 {
				t.Fatalf("running %d, want 1", c.Running())
			}
		})
	}
}

func TestMigrate(t *testing.T) {
	c := mustCluster(t, testNodes(), testModel())
	a := Task{Name: "a", CPU: 2000, Mem: 1000, NumGPU: 1, GPUMilli: 700}
	b := Task{Name: "b", CPU: 1000, Mem: 1000, NumGPU: 1, GPUMilli: 500}
	for _, p := range []struct {
		t  Task
		ch Choice
	}{{a, Choice{0, NewGPUSet(0)}}, {b, Choice{0, NewGPUSet(1)}}} {
		if err := c.Place(p.t, p.ch); err != nil {
			t.Fatal(err)
		}
	}
	cpu, mem, gpu := c.Used()
	// b moves next to nothing on another node, then back onto a's GPU where 300 is free: too small.
	if err := c.Migrate("b", Choice{1, NewGPUSet(2)}); err != nil {
		t.Fatal(err)
	}
	if err := c.Migrate("b", Choice{0, NewGPUSet(0)}); err == nil || !strings.Contains(err.Error(), "milli free") {
		t.Fatalf("migrating onto a full GPU: %v", err)
	}
	if p, _ := c.Placement("b"); p.Choice != (Choice{1, NewGPUSet(2)}) {
		t.Fatalf("failed migration moved the task to %v", p.Choice)
	}
	// Same node, other GPU: the task's own share counts as free.
	if err := c.Migrate("a", Choice{0, NewGPUSet(1)}); err != nil {
		t.Fatal(err)
	}
	if err := c.Migrate("a", Choice{0, NewGPUSet(1)}); err == nil {
		t.Fatal("migrating to the current placement must fail")
	}
	if err := c.Migrate("nobody", Choice{0, NewGPUSet(0)}); err == nil {
		t.Fatal("migrating an unknown task must fail")
	}
	if c2, m2, g2 := c.Used(); c2 != cpu || m2 != mem || g2 != gpu {
		t.Fatalf("totals changed by migrations: %d %d %d -> %d %d %d", cpu, mem, gpu, c2, m2, g2)
	}
	checkConservation(t, c)
}

func TestSnapshotRestoreAndClone(t *testing.T) {
	c := mustCluster(t, testNodes(), testModel())
	if err := c.Place(Task{Name: "a", CPU: 1000, NumGPU: 1, GPUMilli: 300}, Choice{0, NewGPUSet(1)}); err != nil {
		t.Fatal(err)
	}
	snap := c.Snapshot()
	m0, v1 := c.Metrics(), c.NodeVersion(1)
	d := c.Clone()
	if err := c.Place(Task{Name: "b", CPU: 1000, NumGPU: 2, GPUMilli: 1000}, Choice{1, NewGPUSet(0, 3)}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Remove("a"); err != nil {
		t.Fatal(err)
	}
	if err := c.Restore(snap); err != nil {
		t.Fatal(err)
	}
	if c.Metrics() != m0 || c.Running() != 1 {
		t.Fatalf("restore: metrics %+v running %d, want %+v and 1", c.Metrics(), c.Running(), m0)
	}
	if _, ok := c.Placement("a"); !ok {
		t.Fatal("restore lost task a")
	}
	if c.NodeVersion(1) == v1 {
		t.Fatal("a node changed and restored must get a new version")
	}
	checkConservation(t, c)
	if d.Running() != 1 || d.ID() == c.ID() || d.Metrics() != m0 {
		t.Fatal("clone must be an independent copy with its own ID")
	}
	if err := d.Restore(snap); err == nil {
		t.Fatal("restoring another cluster's snapshot must fail")
	}
}

func TestNewClusterRejectsBadNodes(t *testing.T) {
	if _, err := NewCluster([]Node{{Name: "a"}, {Name: "a"}}, nil); err == nil || !strings.Contains(err.Error(), "duplicate") {
		t.Fatalf("duplicate node names: %v", err)
	}
	if _, err := NewCluster([]Node{{Name: "a", GPUs: 9}}, nil); err == nil {
		t.Fatal("9 GPUs must be rejected")
	}
}

func TestNestedSnapshots(t *testing.T) {
	c := mustCluster(t, testNodes(), testModel())
	place := func(name string, node int) {
		t.Helper()
		if err := c.Place(Task{Name: name, CPU: 100}, Choice{Node: node}); err != nil {
			t.Fatal(err)
		}
	}
	place("a", 0)
	s1 := c.Snapshot()
	place("b", 1)
	if _, err := c.Remove("a"); err != nil {
		t.Fatal(err)
	}
	s2 := c.Snapshot()
	place("c", 2)
	if err := c.Restore(s2); err != nil || c.Running() != 1 {
		t.Fatalf("restore s2: %v, running %d", err, c.Running())
	}
	if _, ok := c.Placement("b"); !ok {
		t.Fatal("s2 state has b")
	}
	place("d", 2)
	if err := c.Restore(s1); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Placement("a"); !ok || c.Running() != 1 {
		t.Fatalf("s1 state is just a; running %d", c.Running())
	}
	checkConservation(t, c)
	if err := c.Restore(s2); err == nil {
		t.Fatal("a snapshot taken after the restored one must be gone")
	}
	place("e", 1)
	if err := c.Restore(s1); err != nil || c.Running() != 1 {
		t.Fatalf("s1 stays live after restoring it: %v", err)
	}
	c.Discard(s1)
	if err := c.Restore(s1); err == nil {
		t.Fatal("a discarded snapshot cannot be restored")
	}
	if len(c.journal) != 0 {
		t.Fatal("journal kept with no live snapshot")
	}
}
