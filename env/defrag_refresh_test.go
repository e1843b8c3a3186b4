package env

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/schedrl/schedrl/sim"
	"github.com/schedrl/schedrl/sim/simtest"
)

// openbDefrag is a real openb state: the default pod list placed in trace order on random
// feasible nodes (seeded), the tasks that fit nowhere queued until 50 wait.
func openbDefrag(t testing.TB) (*sim.Cluster, []sim.Task) {
	t.Helper()
	nodes, trace, model := simtest.OpenbTrace(t, "default")
	c, err := sim.NewCluster(nodes, model)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(23, 1))
	var pending []sim.Task
	var buf []int
	for _, task := range trace {
		if buf = c.FeasibleNodes(task, buf[:0]); len(buf) == 0 {
			if pending = append(pending, task); len(pending) == 50 {
				return c, pending
			}
			continue
		}
		i := buf[rng.IntN(len(buf))]
		gpus, _ := c.TightestGPUs(task, i)
		if err := c.Place(task, sim.Choice{Node: i, GPUs: gpus}); err != nil {
			t.Fatal(err)
		}
	}
	t.Fatalf("only %d of the %d tasks wait", len(pending), len(trace))
	return nil, nil
}

// TestDefragIncrementalRefreshMatchesRebuild walks random migrations on an openb state and
// checks after each that the environment, which rescores only the two nodes a migration
// touched, observes bit for bit what one built from scratch on a copy of the cluster does, in
// both stages.
func TestDefragIncrementalRefreshMatchesRebuild(t *testing.T) {
	c, pending := openbDefrag(t)
	if n := len(c.Placements()); n < 5000 {
		t.Fatalf("only %d tasks run", n)
	}
	opts := DefragOptions{Budget: 12, RewardFragment: 1, RewardPending: 1, MigrationCost: 0.1}
	placer := placerFunc(firstFeasible)
	d := NewDefrag(c, pending, placer, opts)
	rng := rand.New(rand.NewPCG(7, 1))
	var got, want Observation
	for {
		fresh := NewDefrag(c.Clone(), pending, placer, opts)
		fresh.used = d.used
		fresh.done = fresh.nMov == 0 || fresh.used >= opts.Budget
		if d.Done() != fresh.Done() || d.nMov != fresh.nMov {
			t.Fatalf("after %d migrations: done %v with %d movable, rebuilt %v with %d", d.Used(), d.Done(), d.nMov, fresh.Done(), fresh.nMov)
		}
		d.Observe(&got)
		fresh.Observe(&want)
		sameObservation(t, d.Used(), &got, &want)
		if d.Done() {
			break
		}
		var movable []int
		for k := range d.Tasks() {
			if got.Mask[k] {
				movable = append(movable, k)
			}
		}
		pick := Action{Candidate: movable[rng.IntN(len(movable))]}
		for _, e := range []*Defrag{d, fresh} {
			if _, err := e.Step(pick); err != nil {
				t.Fatal(err)
			}
		}
		d.Observe(&got)
		fresh.Observe(&want)
		sameObservation(t, d.Used(), &got, &want)
		to, ok := SampleMasked(&got, rng)
		if !ok {
			t.Fatalf("task %q has no feasible target", d.picked.Task.Name)
		}
		if _, err := d.Step(Action{Candidate: to}); err != nil {
			t.Fatal(err)
		}
	}
	if d.Used() != opts.Budget {
		t.Fatalf("the walk stopped after %d of %d migrations", d.Used(), opts.Budget)
	}
}

// sameObservation fails unless the two observations are identical bit for bit.
func sameObservation(t *testing.T, used int, got, want *Observation) {
	t.Helper()
	if got.Stage != want.Stage || got.NumNodes != want.NumNodes || !slices.Equal(got.Mask[:got.NumNodes], want.Mask[:want.NumNodes]) {
		t.Fatalf("after %d migrations: stage %d, %d candidates; rebuilt: stage %d, %d candidates (or the masks differ)", used, got.Stage, got.NumNodes, want.Stage, want.NumNodes)
	}
	nf := len(defragSpec.Node)
	for name, v := range map[string][2][]float32{
		"node":   {got.Nodes[:got.NumNodes*nf], want.Nodes[:want.NumNodes*nf]},
		"task":   {got.Task, want.Task},
		"global": {got.Global, want.Global},
	} {
		for i := range v[1] {
			if math.Float32bits(v[0][i]) != math.Float32bits(v[1][i]) {
				t.Fatalf("after %d migrations, stage %d: %s feature %d is %v, rebuilt %v", used, got.Stage, name, i, v[0][i], v[1][i])
			}
		}
	}
}

// BenchmarkDefragWalkOpenb times the environment's share of one plan on the openb state of
// the test above: building it on a copy of the cluster and 10 seeded random migrations
// (20 decisions, each observed), no network.
func BenchmarkDefragWalkOpenb(b *testing.B) {
	c, pending := openbDefrag(b)
	opts := DefragOptions{Budget: 10, RewardFragment: 1, RewardPending: 1, MigrationCost: 0.1}
	var obs Observation
	for b.Loop() {
		d := NewDefrag(c.Clone(), pending, placerFunc(firstFeasible), opts)
		rng := rand.New(rand.NewPCG(7, 1))
		for !d.Done() {
			d.Observe(&obs)
			a, ok := SampleMasked(&obs, rng)
			if !ok {
				b.Fatal("nothing allowed")
			}
			if _, err := d.Step(Action{Candidate: a}); err != nil {
				b.Fatal(err)
			}
		}
	}
}
