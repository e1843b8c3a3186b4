package env

import (
	"math"
	"testing"

	"github.com/schedrl/schedrl/policy"
	"github.com/schedrl/schedrl/sim/simtest"
)

// greedy picks the feasible node with the lowest frag_delta feature (FGD's rule).
func greedy(obs *Observation) int {
	nf := len(placementSpec.Node)
	best, bestV := -1, float32(math.Inf(1))
	for i, ok := range obs.Mask {
		if ok && obs.Nodes[i*nf+10] < bestV {
			best, bestV = i, obs.Nodes[i*nf+10]
		}
	}
	return best
}

func TestPlacementObservationMatchesSimulator(t *testing.T) {
	c, tasks := simtest.OpenbCluster(t, "default", 1.3, 42)
	a := NewArrivals(c, tasks, DefaultOptions())
	spec := a.Spec()
	var obs Observation
	var feasible []int
	for step := 0; !a.Done(); step++ {
		a.Observe(&obs)
		if len(obs.Nodes) != c.NumNodes()*len(spec.Node) || len(obs.Task) != len(spec.Task) || len(obs.Global) != len(spec.Global) {
			t.Fatalf("step %d: observation sizes %d/%d/%d do not fit the spec", step, len(obs.Nodes), len(obs.Task), len(obs.Global))
		}
		if step%97 == 0 {
			checkStep(t, step, a.Placement, &obs, feasible)
		}
		node := greedy(&obs)
		before := c.ClusterFrag()
		r, err := a.Step(Action{Candidate: node})
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if math.Abs(r.FragDelta-(c.ClusterFrag()-before)) > 1e-6 {
			t.Fatalf("step %d: FragDelta %v, cluster fragment moved %v", step, r.FragDelta, c.ClusterFrag()-before)
		}
	}
}

// checkStep compares the encoded decision with what the simulator says directly.
func checkStep(t *testing.T, step int, p *Placement, obs *Observation, buf []int) {
	t.Helper()
	c, task := p.Cluster(), p.Task()
	feasible := c.FeasibleNodes(task, buf[:0])
	got := 0
	for i, ok := range obs.Mask {
		if ok {
			if got >= len(feasible) || feasible[got] != i {
				t.Fatalf("step %d: mask marks node %d, simulator's feasible nodes are %v", step, i, feasible)
			}
			got++
		}
	}
	if got != len(feasible) {
		t.Fatalf("step %d: mask has %d feasible nodes, simulator %d", step, got, len(feasible))
	}
	checkRange(t, step, p.Spec().Node, obs.Nodes)
	// The tie preference is the cluster's seeded order, most preferred 1.
	if len(obs.TiePref) != c.NumNodes() {
		t.Fatalf("step %d: %d tie preferences for %d nodes", step, len(obs.TiePref), c.NumNodes())
	}
	for i, pref := range obs.TiePref {
		if want := 1 - float32(c.TieRank(i))/float32(c.NumNodes()); pref != want {
			t.Fatalf("step %d node %d: tie preference %v, the cluster ranks it %d (want %v)", step, i, pref, c.TieRank(i), want)
		}
	}
	checkRange(t, step, p.Spec().Task, obs.Task)
	checkRange(t, step, p.Spec().Global, obs.Global)
	// The environment's GPU choice is the least-fragmenting candidate on each node.
	nf := len(placementSpec.Node)
	best := map[int]float64{}
	for _, ch := range c.Candidates(task, nil) {
		d := c.FragDelta(task, ch)
		if v, ok := best[ch.Node]; !ok || d < v {
			best[ch.Node] = d
		}
	}
	for node, d := range best {
		if got := float64(obs.Nodes[node*nf+10]); math.Abs(got-float32ish(d/1000)) > 1e-6 {
			t.Fatalf("step %d node %d: frag_delta %v, best candidate gives %v", step, node, got, d/1000)
		}
		ch, err := p.Choice(Action{Candidate: node})
		if err != nil {
			t.Fatalf("step %d node %d: %v", step, node, err)
		}
		if got := c.FragDelta(task, ch); math.Abs(got-d) > 1e-9 {
			t.Fatalf("step %d node %d: env picks GPUs %v with delta %v, best is %v", step, node, ch.GPUs, got, d)
		}
	}
}

// checkRange asserts every feature lies in [0, 1], except the fragment change (in GPUs, at most
// a node's 8) and the arrived share, which the tune-1.3 protocol takes to 1.3.
func checkRange(t *testing.T, step int, names []string, values []float32) {
	t.Helper()
	for k, v := range values {
		name := names[k%len(names)]
		lo, hi := float32(0), float32(1)
		switch name {
		case "frag_delta":
			lo, hi = -8, 8
		case "arrived":
			hi = 1.5
		}
		if math.IsNaN(float64(v)) || v < lo || v > hi {
			t.Fatalf("step %d: feature %s = %v outside [%v, %v]", step, name, v, lo, hi)
		}
	}
}

func float32ish(x float64) float64 { return float64(float32(x)) }

func TestPlacementRejectsBadActions(t *testing.T) {
	c, tasks := simtest.OpenbCluster(t, "default", 0.3, 43)
	a := NewArrivals(c, tasks, DefaultOptions())
	var obs Observation
	a.Observe(&obs)
	infeasible := -1
	for i, ok := range obs.Mask {
		if !ok {
			infeasible = i
			break
		}
	}
	before := c.Running()
	for _, act := range []Action{{Candidate: -1}, {Candidate: c.NumNodes()}} {
		if _, err := a.Step(act); err == nil {
			t.Errorf("action %+v accepted", act)
		}
	}
	if infeasible >= 0 {
		if _, err := a.Step(Action{Candidate: infeasible}); err == nil {
			t.Errorf("infeasible node %d accepted", infeasible)
		}
	}
	if c.Running() != before {
		t.Fatalf("a rejected action changed the cluster")
	}
}

func TestPlacementReward(t *testing.T) {
	c, tasks := simtest.OpenbCluster(t, "default", 0.3, 44)
	opts := Options{RewardPlaced: 2, RewardFragment: 0.5}
	p := NewPlacement(c, opts)
	for _, task := range tasks[:200] {
		if p.Present(task, 0) == 0 {
			continue
		}
		var obs Observation
		p.Observe(&obs)
		before := c.ClusterFrag()
		r, err := p.Step(Action{Candidate: greedy(&obs)})
		if err != nil {
			t.Fatal(err)
		}
		want := 2*float64(task.TotalGPUMilli())/1000 - 0.5*(c.ClusterFrag()-before)/1000
		if math.Abs(r.Reward-want) > 1e-9 {
			t.Fatalf("task %s: reward %v, want %v", task.Name, r.Reward, want)
		}
	}
}

// BenchmarkArrivalsStep times one PPO-style step on the 1213-node cluster: encode the
// observation, pick the greedy node, place, present the next task.
func BenchmarkArrivalsStep(b *testing.B) {
	c0, tasks := simtest.OpenbCluster(b, "default", 1.3, 42)
	var obs Observation
	c := c0.Clone()
	a := NewArrivals(c, tasks, DefaultOptions())
	b.ResetTimer()
	for range b.N {
		if a.Done() {
			b.StopTimer()
			a = NewArrivals(c0.Clone(), tasks, DefaultOptions())
			b.StartTimer()
		}
		a.Observe(&obs)
		if _, err := a.Step(Action{Candidate: greedy(&obs)}); err != nil {
			b.Fatal(err)
		}
	}
}

// With the fgd-best action set the mask holds exactly the feasible nodes with FGD's best
// integer score, so FGD's own choice is always among them.
func TestFGDBestCandidates(t *testing.T) {
	c, tasks := simtest.OpenbCluster(t, "default", 1.3, 42)
	opts := DefaultOptions()
	opts.Candidates = CandidatesFGDBest
	a := NewArrivals(c, tasks, opts)
	fgd := &policy.FGD{}
	var obs Observation
	narrower := 0
	for step := 0; step < 3000 && !a.Done(); step++ {
		a.Observe(&obs)
		task := a.Task()
		ch, ok := fgd.Place(c, task, nil)
		if !ok {
			t.Fatalf("step %d: FGD finds no node for a task the environment presents", step)
		}
		want := fgd.Score(c, task, ch)
		if !obs.Mask[ch.Node] {
			t.Fatalf("step %d: FGD's node %d (score %v) is not a candidate", step, ch.Node, want)
		}
		feasible := 0
		for i := range obs.Mask {
			if !a.Mask(i) {
				if obs.Mask[i] {
					t.Fatalf("step %d: infeasible node %d is a candidate", step, i)
				}
				continue
			}
			feasible++
			best, _ := a.Choice(Action{Candidate: i})
			if got := fgd.Score(c, task, best) == want; got != obs.Mask[i] {
				t.Fatalf("step %d node %d: candidate %v, but its FGD score %v vs best %v", step, i, obs.Mask[i], fgd.Score(c, task, best), want)
			}
		}
		if n := countTrue(obs.Mask); n < feasible {
			narrower++
		}
		if _, err := a.Step(Action{Candidate: ch.Node}); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
	}
	if narrower == 0 {
		t.Fatal("the fgd-best mask never excluded a feasible node")
	}
}

func countTrue(b []bool) int {
	n := 0
	for _, x := range b {
		if x {
			n++
		}
	}
	return n
}
