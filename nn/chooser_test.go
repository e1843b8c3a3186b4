package nn

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sugarme/gotch"

	"github.com/schedrl/schedrl/defrag"
	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/sim"
)

// defragPolicy saves a freshly initialised defrag network as a checkpoint and loads it the
// way defrag plan --model does.
func defragPolicy(t testing.TB, seed int64) *DefragPolicy {
	t.Helper()
	spec, err := env.SpecOf(env.DefragName)
	if err != nil {
		t.Fatal(err)
	}
	var nc config.NetworkConfig
	nc.SetDefaults()
	Seed(seed)
	net, err := NewNet(NewArch(spec, nc, 5), gotch.CPU)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "defrag-ckpt")
	if _, err := SaveCheckpoint(dir, net, Lineage{}); err != nil {
		t.Fatal(err)
	}
	p, err := LoadDefragPolicy(dir, gotch.CPU)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDefragPlansReplayFeasible: over many random states, the checkpoint's plans (greedy
// decoding and sampled, best of K kept) are valid step by step when re-applied to a fresh copy
// of the start with the simulator's own checks, within budget, and the predictions after each
// step are what the simulator measures.
func TestDefragPlansReplayFeasible(t *testing.T) {
	pol := defragPolicy(t, 11)
	n := 40
	if testing.Short() {
		n = 10
	}
	moved := 0
	for seed := range uint64(n) {
		pr, err := defrag.RandomProblem(seed)
		if err != nil {
			t.Fatal(err)
		}
		p, err := defrag.Best(pr, pol, 1+int(seed%4), seed)
		if err != nil {
			t.Fatalf("state %d: %v", seed, err)
		}
		if len(p.Steps) > pr.Options.Budget {
			t.Fatalf("state %d: %d migrations over budget %d", seed, len(p.Steps), pr.Options.Budget)
		}
		c := pr.Cluster.Clone()
		for k, s := range p.Steps {
			cur, ok := c.Placement(s.Task)
			if !ok || c.Node(cur.Choice.Node).Name != s.FromNode || cur.Choice.GPUs != sim.NewGPUSet(s.FromGPUs...) {
				t.Fatalf("state %d step %d: task %q is not where the plan says", seed, k+1, s.Task)
			}
			i, _ := c.NodeIndex(s.ToNode)
			to := sim.Choice{Node: i, GPUs: sim.NewGPUSet(s.ToGPUs...)}
			if _, err := c.Remove(s.Task); err != nil {
				t.Fatal(err)
			}
			if err := c.Fits(cur.Task, to); err != nil || i == cur.Choice.Node {
				t.Fatalf("state %d step %d: infeasible move to %s: %v", seed, k+1, s.ToNode, err)
			}
			if err := c.Place(cur.Task, to); err != nil {
				t.Fatal(err)
			}
			got, _ := env.Placeable(c, pr.Pending, pr.Placer)
			if f := c.Metrics().FragGPU; math.Abs(f-s.After.FragGPU) > 1e-6 || got != s.After.PendingPlaced {
				t.Fatalf("state %d step %d: predicted frag %.3f placed %d, simulator %.3f %d", seed, k+1, s.After.FragGPU, s.After.PendingPlaced, f, got)
			}
			moved++
		}
	}
	if moved == 0 {
		t.Fatal("no plan moved anything")
	}
}

// TestDefragChooserScoresAreTheNetwork: the merged-row CPU scorer gives every candidate of
// both stages the logit Net.Forward gives it over the unmerged observation, greedy decoding
// takes the best allowed one, and sampling only ever draws allowed candidates.
func TestDefragChooserScoresAreTheNetwork(t *testing.T) {
	pol := defragPolicy(t, 12)
	pr, err := defrag.RandomProblem(5)
	if err != nil {
		t.Fatal(err)
	}
	e := env.NewDefrag(pr.Cluster.Clone(), pr.Pending, pr.Placer, pr.Options)
	ch := &chooser{p: pol}
	rng := rand.New(rand.NewPCG(1, 2))
	var obs env.Observation
	stages := map[int]bool{}
	for !e.Done() {
		e.Observe(&obs)
		if err := ch.score(&obs); err != nil {
			t.Fatal(err)
		}
		hb := NewHostBatch(pol.Net.Arch, 1, obs.NumNodes)
		if err := hb.Put(0, &obs); err != nil {
			t.Fatal(err)
		}
		var want []float32
		NoGrad(func() {
			in := hb.Tensors(gotch.CPU)
			out := pol.Net.Forward(in)
			in.Drop()
			want = HostFloats(out.Logits, nil)
			out.Drop()
		})
		for i, ok := range obs.Mask {
			if ok && math.Abs(float64(ch.cand[i]-want[i])) > 1e-4 {
				t.Fatalf("stage %d candidate %d: scorer %v, Forward %v", obs.Stage, i, ch.cand[i], want[i])
			}
		}
		best := argmaxFeasible(ch.cand, obs.Mask, nil)
		a, err := ch.choose(&obs, rng)
		if err != nil || a.Candidate != best {
			t.Fatalf("greedy decoding picked %d (%v), best allowed is %d", a.Candidate, err, best)
		}
		for range 50 {
			if i := sampleMasked(ch.cand, obs.Mask, rng); i < 0 || !obs.Mask[i] {
				t.Fatalf("sampled candidate %d is not allowed", i)
			}
		}
		stages[obs.Stage] = true
		if _, err := e.Step(a); err != nil {
			t.Fatal(err)
		}
	}
	if len(stages) != 2 {
		t.Fatalf("episode covered stages %v", stages)
	}
}

// A placement checkpoint cannot plan migrations: the refusal names both environments.
func TestLoadDefragPolicyRefusesPlacementCheckpoint(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "placement")
	if _, err := SaveCheckpoint(dir, testNet(t, 3), Lineage{}); err != nil {
		t.Fatal(err)
	}
	_, err := LoadDefragPolicy(dir, gotch.CPU)
	if err == nil || !strings.Contains(err.Error(), "a placement network") || !strings.Contains(err.Error(), env.DefragSpec) {
		t.Fatalf("placement checkpoint loaded as a defrag planner: %v", err)
	}
}

// TestGreedyChoiceActsWhenMigratingIsLikelier: greedy decoding stops only when STOP holds at
// least half the stage-one probability, even when STOP is the single likeliest candidate; stage
// two, and a stage one whose STOP is masked, take the argmax.
func TestGreedyChoiceActsWhenMigratingIsLikelier(t *testing.T) {
	all := []bool{true, true, true, true}
	cases := []struct {
		name   string
		logits []float32
		mask   []bool
		stage  int
		want   int
	}{
		// P(STOP) = e / (e + 3 e^0.5) = 0.35: migrate, to the likeliest task.
		{"stop likeliest single, migrating likelier", []float32{0.5, 0.6, 0.5, 1}, all, 0, 1},
		// P(STOP) = e^2 / (e^2 + 3 e^0.5) = 0.60.
		{"stop holds half", []float32{0.5, 0.5, 0.5, 2}, all, 0, 3},
		// Task 1 is masked: P(STOP) = e / (e + 2 e^0.5) = 0.45.
		{"masked tasks do not count", []float32{0.5, 5, 0.5, 1}, []bool{true, false, true, true}, 0, 0},
		{"stage two is argmax", []float32{0.5, 0.6, 0.5, 1}, all, 1, 3},
		{"no stop allowed", []float32{0.5, 0.6, 0.5, 1}, []bool{true, true, true, false}, 0, 1},
		{"only stop", []float32{9, 9, 9, -1}, []bool{false, false, false, true}, 0, 3},
	}
	for _, c := range cases {
		if got := greedyChoice(c.logits, c.mask, c.stage); got != c.want {
			t.Errorf("%s: greedyChoice = %d, want %d", c.name, got, c.want)
		}
	}
}
