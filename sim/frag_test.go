package sim

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The hand-worked examples use one node (4 CPU cores, two T4 GPUs) and three shapes:
// a 500-milli share (w 0.5), one whole GPU (w 0.3), a CPU-only task of 2 cores (w 0.2).
func TestFragmentHandWorked(t *testing.T) {
	node := []Node{{Name: "n", CPU: 4000, Mem: 1 << 20, GPUs: 2, GPUType: "T4"}}
	share := func(milli int64) Task { return Task{NumGPU: 1, GPUMilli: milli} }
	cases := []struct {
		name  string
		model *FragModel
		setup []Placement
		want  float64
	}{
		// Idle 2000; the share and whole-GPU shapes fit with no GPU too small; CPU-only
		// tasks cannot use GPUs: 0.2 x 2000.
		{"empty node", testModel(), nil, 400},
		// GPU0 has 300 free, GPU1 1000: share shape leaves GPU0 (0.5 x 300), whole-GPU shape
		// leaves GPU0 (0.3 x 300), CPU-only all idle (0.2 x 1300).
		{"gpu sharing", testModel(), []Placement{{share(700), Choice{0, NewGPUSet(0)}}}, 150 + 90 + 260},
		// GPU0 600, GPU1 400: the share fits on GPU0 and loses GPU1 (0.5 x 400); no whole GPU
		// (0.3 x 1000); CPU-only (0.2 x 1000).
		{"no whole gpu left", testModel(), []Placement{{share(400), Choice{0, NewGPUSet(0)}}, {share(600), Choice{0, NewGPUSet(1)}}}, 200 + 300 + 200},
		// As "gpu sharing" but only 500 milli-CPU left: no GPU shape fits, every idle milli is
		// fragment for every shape.
		{"cpu-bound", testModel(), []Placement{{Task{CPU: 3500, NumGPU: 1, GPUMilli: 700}, Choice{0, NewGPUSet(0)}}}, 1300},
		// The share shape may only run on V100: all of the T4 node's idle GPU is its fragment.
		{"type constraint", &FragModel{Shapes: []Shape{
			{CPU: 1000, NumGPU: 1, GPUMilli: 500, GPUTypes: []string{"V100"}, Weight: 0.5},
			{CPU: 1000, NumGPU: 1, GPUMilli: 1000, Weight: 0.3},
			{CPU: 2000, Weight: 0.2},
		}}, nil, 1000 + 0 + 400},
		{"fully used node", testModel(), []Placement{{Task{NumGPU: 2, GPUMilli: 1000}, Choice{0, NewGPUSet(0, 1)}}}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := mustCluster(t, node, tc.model)
			for k, p := range tc.setup {
				p.Task.Name = string(rune('a' + k))
				if err := c.Place(p.Task, p.Choice); err != nil {
					t.Fatal(err)
				}
			}
			if got := c.NodeFrag(0); math.Abs(got-tc.want) > 1e-9 {
				t.Fatalf("fragment %v, want %v", got, tc.want)
			}
			if got := c.ClusterFrag(); math.Abs(got-tc.want) > 1e-9 {
				t.Fatalf("cluster fragment %v, want %v", got, tc.want)
			}
		})
	}
}

func TestFragDeltaAndRatio(t *testing.T) {
	c := mustCluster(t, []Node{{Name: "n", CPU: 4000, Mem: 1 << 20, GPUs: 2, GPUType: "T4"}}, testModel())
	task := Task{Name: "a", NumGPU: 1, GPUMilli: 700}
	ch := Choice{0, NewGPUSet(0)}
	// 400 before (empty node), 500 after (see TestFragmentHandWorked "gpu sharing").
	if d := c.FragDelta(task, ch); math.Abs(d-100) > 1e-9 {
		t.Fatalf("delta %v, want 100", d)
	}
	if err := c.Place(task, ch); err != nil {
		t.Fatal(err)
	}
	m := c.Metrics()
	if math.Abs(m.FragRatioPct-100*500.0/1300) > 1e-9 || math.Abs(m.GPUAllocPct-35) > 1e-9 || m.GPUOccupiedPct != 50 {
		t.Fatalf("metrics %+v", m)
	}
}

func TestTypicalShapes(t *testing.T) {
	var tasks []Task
	add := func(n int, task Task) {
		for i := 0; i < n; i++ {
			tasks = append(tasks, task)
		}
	}
	add(50, Task{CPU: 4000, NumGPU: 1, GPUMilli: 500})
	add(30, Task{CPU: 8000})
	add(10, Task{CPU: 2000, NumGPU: 1, GPUMilli: 1000, GPUTypes: []string{"T4"}})
	add(10, Task{CPU: 1000, NumGPU: 1, GPUMilli: 1000, Mem: 5}) // same count: larger CPU sorts first
	add(5, Task{CPU: 1000, NumGPU: 8, GPUMilli: 1000})
	m, err := TypicalShapes(tasks, 0.9)
	if err != nil {
		t.Fatal(err)
	}
	// 50 + 30 + 10 = 90 of 105 tasks < 90%: one more shape (the 2000-CPU one wins the tie).
	if len(m.Shapes) != 4 {
		t.Fatalf("%d shapes, want 4: %+v", len(m.Shapes), m.Shapes)
	}
	want := []struct {
		cpu int64
		w   float64
	}{{4000, 0.5}, {8000, 0.3}, {2000, 0.1}, {1000, 0.1}}
	for i, w := range want {
		if m.Shapes[i].CPU != w.cpu || math.Abs(m.Shapes[i].Weight-w.w) > 1e-12 {
			t.Fatalf("shape %d = %+v, want cpu %d weight %v", i, m.Shapes[i], w.cpu, w.w)
		}
	}
	if _, err := TypicalShapes(nil, 0.95); err == nil {
		t.Fatal("no tasks must be an error")
	}
}

// LeastFragmentingGPUs is the first GPU choice with the smallest rank of its fragment change,
// checked against every choice on random cluster states, ranked by the change and by FGD's
// score (where a later GPU with a smaller change but the same score does not win).
func TestLeastFragmentingGPUsAgainstEveryChoice(t *testing.T) {
	c := mustCluster(t, testNodes(), testModel())
	rng := rand.New(rand.NewPCG(3, 4))
	var buf []Choice
	ranks := map[string]func(float64) float64{"delta": Delta, "fgd score": func(d float64) float64 { return -FGDScore(d) }}
	checked := 0
	for k := range 2000 {
		task := randomTask(rng, k)
		for i := range c.NumNodes() {
			gpus, delta, ok := c.LeastFragmentingGPUs(task, i, Delta)
			_, fits := c.TightestGPUs(task, i)
			if ok != fits {
				t.Fatalf("task %+v node %d: ok %v, TightestGPUs fits %v", task, i, ok, fits)
			}
			if !ok || !task.Sharing() {
				continue
			}
			for name, rank := range ranks {
				gpus, delta, _ = c.LeastFragmentingGPUs(task, i, rank)
				want, wantDelta := GPUSet(0), math.Inf(1)
				for g := range c.Node(i).GPUs {
					if c.Free(i).GPU[g] < task.GPUMilli {
						continue
					}
					ch := Choice{Node: i, GPUs: NewGPUSet(g)}
					if d := c.FragDelta(task, ch); want == 0 || rank(d) < rank(wantDelta) {
						want, wantDelta = ch.GPUs, d
					}
				}
				if gpus != want || delta != wantDelta {
					t.Fatalf("task %+v node %d by %s: %v (delta %v), want %v (%v)", task, i, name, gpus, delta, want, wantDelta)
				}
				checked++
			}
		}
		if buf = c.Candidates(task, buf[:0]); len(buf) > 0 {
			if err := c.Place(task, buf[rng.IntN(len(buf))]); err != nil {
				t.Fatal(err)
			}
		}
		if running := c.Placements(); len(running) > 3 && rng.IntN(2) == 0 {
			if _, err := c.Remove(running[rng.IntN(len(running))].Task.Name); err != nil {
				t.Fatal(err)
			}
		}
	}
	if checked < 100 {
		t.Fatalf("only %d sharing choices checked", checked)
	}
}
