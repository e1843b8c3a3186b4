package env

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/schedrl/schedrl/sim"
)

// defragCluster: two 1-GPU nodes each half used by a sharing task, a third node's GPU taken by
// a whole-GPU task, and a pending whole-GPU task that fits nowhere until the halves meet.
func defragCluster(t *testing.T) (*sim.Cluster, []sim.Task) {
	t.Helper()
	nodes := []sim.Node{
		{Name: "a", CPU: 8000, Mem: 8192, GPUs: 1, GPUType: "A"},
		{Name: "b", CPU: 8000, Mem: 8192, GPUs: 1, GPUType: "A"},
		{Name: "c", CPU: 8000, Mem: 8192, GPUs: 1, GPUType: "A"},
	}
	model := &sim.FragModel{Shapes: []sim.Shape{{CPU: 1000, NumGPU: 1, GPUMilli: 1000, Weight: 1}}}
	c, err := sim.NewCluster(nodes, model)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct {
		t  sim.Task
		ch sim.Choice
	}{
		{sim.Task{Name: "s1", CPU: 2000, Mem: 1024, NumGPU: 1, GPUMilli: 500}, sim.Choice{Node: 0, GPUs: sim.NewGPUSet(0)}},
		{sim.Task{Name: "s2", CPU: 1000, Mem: 1024, NumGPU: 1, GPUMilli: 500}, sim.Choice{Node: 1, GPUs: sim.NewGPUSet(0)}},
		{sim.Task{Name: "w", CPU: 1000, Mem: 1024, NumGPU: 1, GPUMilli: 1000}, sim.Choice{Node: 2, GPUs: sim.NewGPUSet(0)}},
	} {
		if err := c.Place(p.t, p.ch); err != nil {
			t.Fatal(err)
		}
	}
	return c, []sim.Task{{Name: "p", CPU: 1000, Mem: 1024, NumGPU: 1, GPUMilli: 1000}}
}

// placerFunc makes a placement function a sim.Placer.
type placerFunc func(c *sim.Cluster, t sim.Task) (sim.Choice, bool)

func (placerFunc) Name() string { return "first-feasible" }
func (f placerFunc) Place(c *sim.Cluster, t sim.Task, _ *rand.Rand) (sim.Choice, bool) {
	return f(c, t)
}

// firstFeasible places on the first feasible node with best-fit GPUs.
func firstFeasible(c *sim.Cluster, t sim.Task) (sim.Choice, bool) {
	nodes := c.FeasibleNodes(t, nil)
	if len(nodes) == 0 {
		return sim.Choice{}, false
	}
	gpus, _ := c.TightestGPUs(t, nodes[0])
	return sim.Choice{Node: nodes[0], GPUs: gpus}, true
}

func TestDefragStagesMasksAndReward(t *testing.T) {
	c, pending := defragCluster(t)
	opts := DefragOptions{Budget: 2, RewardFragment: 1, RewardPending: 1, MigrationCost: 0.5}
	d := NewDefrag(c, pending, placerFunc(firstFeasible), opts)
	if d.PlaceableMilli() != 0 || c.ClusterFrag() != 1000 {
		t.Fatalf("start: placeable %d frag %v", d.PlaceableMilli(), c.ClusterFrag())
	}
	var obs Observation
	d.Observe(&obs)
	// Candidates by name: s1, s2, w, then STOP; w has no other node with a whole GPU free.
	if want := []bool{true, true, false, true}; obs.NumNodes != 4 || !equalMask(obs.Mask, want) {
		t.Fatalf("stage one mask %v, want %v", obs.Mask[:obs.NumNodes], want)
	}
	if got := obs.Nodes[3*len(defragSpec.Node)+len(defragSpec.Node)-1]; got != 1 {
		t.Fatalf("STOP row's stop feature is %v", got)
	}
	if _, err := d.Step(Action{Candidate: 2}); err == nil || !strings.Contains(err.Error(), "not movable") {
		t.Fatalf("picking an immovable task: %v", err)
	}
	if _, err := d.Step(Action{Candidate: 0}); err != nil {
		t.Fatal(err)
	}
	d.Observe(&obs)
	if want := []bool{false, true, false}; obs.Stage != 1 || !equalMask(obs.Mask, want) {
		t.Fatalf("stage two mask %v, want %v (own node excluded)", obs.Mask[:obs.NumNodes], want)
	}
	if _, err := d.Step(Action{Candidate: 0}); err == nil {
		t.Fatal("migrating onto its own node was accepted")
	}
	res, err := d.Step(Action{Candidate: 1})
	if err != nil {
		t.Fatal(err)
	}
	// Fragment falls by 1 GPU, the pending GPU becomes placeable, 0.5 GPU and 2000/8000 CPU move.
	want := 1 + 1 - 0.5*(0.5+0.25)
	if math.Abs(res.Reward-want) > 1e-9 || res.FragDelta != -1000 || res.Choice != (sim.Choice{Node: 1, GPUs: sim.NewGPUSet(0)}) {
		t.Fatalf("result %+v, want reward %v", res, want)
	}
	if d.Used() != 1 || d.Stage() != 0 || d.Done() {
		t.Fatalf("after one migration: used %d stage %d done %v", d.Used(), d.Stage(), d.Done())
	}
	d.Observe(&obs)
	stop := obs.NumNodes - 1
	res, err = d.Step(Action{Candidate: stop})
	if err != nil || !res.Done || !d.Done() {
		t.Fatalf("STOP: %+v %v", res, err)
	}
	if _, err := d.Step(Action{Candidate: 0}); err == nil {
		t.Fatal("step after the end was accepted")
	}
}

func TestDefragBudgetEndsEpisode(t *testing.T) {
	c, pending := defragCluster(t)
	d := NewDefrag(c, pending, placerFunc(firstFeasible), DefragOptions{Budget: 1})
	if _, err := d.Step(Action{Candidate: 1}); err != nil {
		t.Fatal(err)
	}
	res, err := d.Step(Action{Candidate: 0})
	if err != nil || !res.Done || d.Used() != 1 {
		t.Fatalf("budget 1: %+v %v used %d", res, err, d.Used())
	}
}

func TestDefragRandomWalksStayFeasible(t *testing.T) {
	for seed := range uint64(30) {
		c, pending := defragCluster(t)
		d := NewDefrag(c, pending, placerFunc(firstFeasible), DefragOptions{Budget: 20})
		rng := sim.RNG(seed, 1)
		var obs Observation
		for steps := 0; !d.Done(); steps++ {
			d.Observe(&obs)
			i, ok := SampleMasked(&obs, rng)
			if !ok {
				t.Fatalf("seed %d: nothing allowed but not done", seed)
			}
			if _, err := d.Step(Action{Candidate: i}); err != nil {
				t.Fatalf("seed %d step %d: masked action refused: %v", seed, steps, err)
			}
			if c.Running() != 3 {
				t.Fatalf("seed %d: %d tasks running", seed, c.Running())
			}
		}
	}
}

func equalMask(got, want []bool) bool {
	if len(got) < len(want) {
		return false
	}
	for i := range want {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}
