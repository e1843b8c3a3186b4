package defrag

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/policy"
	"github.com/schedrl/schedrl/sim"
)

// randomProblem is RandomProblem, failing the test on error.
func randomProblem(t *testing.T, seed uint64) Problem {
	t.Helper()
	pr, err := RandomProblem(seed)
	if err != nil {
		t.Fatal(err)
	}
	return pr
}

// checkStepwise applies a plan's migrations one at a time to a fresh copy of the start,
// checking each against the simulator before it is made and the prediction after it.
func checkStepwise(t *testing.T, pr Problem, p Plan) {
	t.Helper()
	c := pr.Cluster.Clone()
	if len(p.Steps) > pr.Options.Budget {
		t.Fatalf("%s: %d migrations over budget %d", p.Method, len(p.Steps), pr.Options.Budget)
	}
	for k, s := range p.Steps {
		cur, ok := c.Placement(s.Task)
		if !ok {
			t.Fatalf("%s step %d: task %q not running", p.Method, k+1, s.Task)
		}
		if c.Node(cur.Choice.Node).Name != s.FromNode || cur.Choice.GPUs != sim.NewGPUSet(s.FromGPUs...) {
			t.Fatalf("%s step %d: task %q is at %s %v, plan says %s %v", p.Method, k+1, s.Task, c.Node(cur.Choice.Node).Name, cur.Choice.GPUs, s.FromNode, s.FromGPUs)
		}
		i, _ := c.NodeIndex(s.ToNode)
		to := sim.Choice{Node: i, GPUs: sim.NewGPUSet(s.ToGPUs...)}
		if _, err := c.Remove(s.Task); err != nil {
			t.Fatal(err)
		}
		if err := c.Fits(cur.Task, to); err != nil {
			t.Fatalf("%s step %d: infeasible: %v", p.Method, k+1, err)
		}
		if err := c.Place(cur.Task, to); err != nil {
			t.Fatal(err)
		}
		m := c.Metrics()
		n, milli := env.Placeable(c, pr.Pending, pr.Placer)
		if diff := m.FragGPU - s.After.FragGPU; diff > 1e-6 || diff < -1e-6 || n != s.After.PendingPlaced || float64(milli)/1000 != s.After.PendingGPUs {
			t.Fatalf("%s step %d: predicted frag %.3f placeable %d, simulator says %.3f %d", p.Method, k+1, s.After.FragGPU, s.After.PendingPlaced, m.FragGPU, n)
		}
	}
}

// TestPlansReplayFeasible: over many random states, every method's plan (K samples kept best)
// is feasible step by step and its predictions are what the simulator measures.
func TestPlansReplayFeasible(t *testing.T) {
	nStates := 60
	if testing.Short() {
		nStates = 15
	}
	for seed := range uint64(nStates) {
		pr := randomProblem(t, seed)
		for _, m := range Methods() {
			planner, err := NewPlanner(m)
			if err != nil {
				t.Fatal(err)
			}
			p, err := Best(pr, planner, 1+int(seed%3), seed)
			if err != nil {
				t.Fatalf("state %d %s: %v", seed, m, err)
			}
			checkStepwise(t, pr, p)
		}
	}
}

func TestReplayRejectsInvalidPlans(t *testing.T) {
	pr := randomProblem(t, 3)
	pr.Options.Budget = 50
	good, err := Best(pr, RandomAgent(), 1, 1)
	if err != nil || len(good.Steps) == 0 {
		t.Fatalf("need a non-empty plan: %v (%d steps)", err, len(good.Steps))
	}
	first := good.Steps[0].Migration
	cases := []struct {
		name string
		edit func(m *Migration)
		want string
	}{
		{"unknown task", func(m *Migration) { m.Task = "nope" }, "not running"},
		{"wrong source", func(m *Migration) { m.FromNode = "elsewhere" }, "plan says"},
		{"missing target", func(m *Migration) { m.ToNode = "ghost" }, "does not exist"},
		{"target is the source", func(m *Migration) { m.ToNode, m.ToGPUs = m.FromNode, m.FromGPUs }, "equals"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := first
			tc.edit(&m)
			_, err := Replay(pr, "edited", []Migration{m})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "step 1") {
				t.Fatalf("got %v, want an error naming step 1 with %q", err, tc.want)
			}
		})
	}
	pr.Options.Budget = 0
	if _, err := Replay(pr, "over", []Migration{first}); err == nil || !strings.Contains(err.Error(), "budget") {
		t.Fatalf("over budget: got %v", err)
	}
}

func TestHeuristicOrderDropsInfeasibleMoves(t *testing.T) {
	// Two whole-GPU tasks that swap nodes cannot be done one migration at a time: both stay.
	nodes := []sim.Node{{Name: "a", CPU: 8000, Mem: 8192, GPUs: 1, GPUType: "A"}, {Name: "b", CPU: 8000, Mem: 8192, GPUs: 1, GPUType: "A"}}
	c, err := sim.NewCluster(nodes, nil)
	if err != nil {
		t.Fatal(err)
	}
	x := sim.Task{Name: "x", CPU: 1000, Mem: 1024, NumGPU: 1, GPUMilli: 1000}
	y := sim.Task{Name: "y", CPU: 1000, Mem: 1024, NumGPU: 1, GPUMilli: 1000}
	a0, b0 := sim.Choice{Node: 0, GPUs: sim.NewGPUSet(0)}, sim.Choice{Node: 1, GPUs: sim.NewGPUSet(0)}
	if c.Place(x, a0) != nil || c.Place(y, b0) != nil {
		t.Fatal("setup")
	}
	got := order(c.Clone(), []policy.Move{{Task: "x", From: a0, To: b0}, {Task: "y", From: b0, To: a0}})
	if len(got) != 0 {
		t.Fatalf("swap ordered into %v, want nothing", got)
	}
	// With a free node the moves are reordered so each fits when made.
	nodes = append(nodes, sim.Node{Name: "c", CPU: 8000, Mem: 8192, GPUs: 1, GPUType: "A"})
	c, _ = sim.NewCluster(nodes, nil)
	c0 := sim.Choice{Node: 2, GPUs: sim.NewGPUSet(0)}
	if c.Place(x, a0) != nil || c.Place(y, b0) != nil {
		t.Fatal("setup")
	}
	got = order(c.Clone(), []policy.Move{{Task: "x", From: a0, To: b0}, {Task: "y", From: b0, To: c0}})
	if len(got) != 2 || got[0].Task != "y" || got[1].Task != "x" {
		t.Fatalf("got %+v, want y then x", got)
	}
}

func TestMakeStateDeterministic(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two openb states")
	}
	a := openbProblem(t, 50, 10)
	b := openbProblem(t, 50, 10)
	sa := sim.NewSnapshotFile(a.Cluster, a.Pending, nil)
	sb := sim.NewSnapshotFile(b.Cluster, b.Pending, nil)
	if fmt.Sprint(sa) != fmt.Sprint(sb) {
		t.Fatal("same seed gave different states")
	}
	if len(a.Pending) == 0 {
		t.Fatal("no pending tasks")
	}
	for _, tk := range a.Pending {
		if n := a.Cluster.FeasibleNodes(tk, nil); len(n) > 0 {
			t.Fatalf("pending task %q fits node %d", tk.Name, n[0])
		}
	}
}

// TestPlanLogReplays: a plan's decision log passes the simulator's log validator and ends in
// the state the plan predicts.
func TestPlanLogReplays(t *testing.T) {
	for seed := range uint64(10) {
		pr := randomProblem(t, seed)
		p, err := Best(pr, Heuristic{D: mustDefragmenter(t, "greedy")}, 1, seed)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "plan.jsonl")
		if err := WriteLog(path, pr, p, map[string]string{"protocol": "defrag-plan"}); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		lr, err := sim.NewLogReader(f)
		if err != nil {
			t.Fatal(err)
		}
		r, err := sim.NewReplayer(lr.Header)
		if err != nil {
			t.Fatal(err)
		}
		for {
			ev, err := lr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := r.Apply(ev); err != nil {
				t.Fatalf("seed %d line %d: %v", seed, lr.Line(), err)
			}
		}
		f.Close()
		if got := r.C.Metrics().FragGPU; math.Abs(got-p.After.FragGPU) > 1e-9 || r.C.Running() != pr.Cluster.Running() {
			t.Fatalf("seed %d: replayed fragment %v, plan says %v", seed, got, p.After.FragGPU)
		}
		for _, tk := range pr.Pending {
			if _, ok := r.Pending(tk.Name); !ok {
				t.Fatalf("seed %d: pending task %q not waiting after replay", seed, tk.Name)
			}
		}
	}
}

func mustDefragmenter(t *testing.T, name string) policy.Defragmenter {
	t.Helper()
	d, err := policy.NewDefragmenter(name)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestBudgetFor(t *testing.T) {
	for _, tc := range []struct {
		budget  float64
		running int
		want    int
	}{{50, 8000, 50}, {1, 10, 1}, {0.1, 8243, 825}, {0.1, 10, 1}, {0.5, 3, 2}} {
		if got := BudgetFor(tc.budget, tc.running); got != tc.want {
			t.Errorf("BudgetFor(%v, %d) = %d, want %d", tc.budget, tc.running, got, tc.want)
		}
	}
}

// TestExpertPlansAreEnvDemonstrations: every heuristic's plan is a valid action sequence of the
// defrag environment (masks allow each pick and target), and the environment's rewards add up
// to the plan's.
func TestExpertPlansAreEnvDemonstrations(t *testing.T) {
	for seed := range uint64(20) {
		pr := randomProblem(t, seed)
		for _, m := range policy.Defragmenters() {
			p, err := Best(pr, Heuristic{D: mustDefragmenter(t, m)}, 1, seed)
			if err != nil {
				t.Fatal(err)
			}
			var reward float64
			var labels int
			acts, err := ExpertActions(pr, p, func(l Labelled) {
				if !l.Obs.Mask[l.Action.Candidate] {
					t.Fatalf("seed %d %s: action %d masked out", seed, m, l.Action.Candidate)
				}
				reward += l.Reward
				labels++
			})
			if err != nil {
				t.Fatalf("seed %d %s: %v", seed, m, err)
			}
			if want := 2 * len(p.Steps); len(acts) < want || len(acts) > want+1 || labels != len(acts) {
				t.Fatalf("seed %d %s: %d actions for %d migrations", seed, m, len(acts), len(p.Steps))
			}
			if math.Abs(reward-p.After.Reward) > 1e-6 {
				t.Fatalf("seed %d %s: env reward %v, plan reward %v", seed, m, reward, p.After.Reward)
			}
		}
	}
}
