package online

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/policy"
	"github.com/schedrl/schedrl/sim"
)

type feasibleOnly struct{ policy.Placer }

func (p feasibleOnly) Place(c *sim.Cluster, t sim.Task, rng *rand.Rand) (sim.Choice, bool) {
	if len(c.FeasibleNodes(t, nil)) == 0 {
		return sim.Choice{}, false
	}
	return p.Placer.Place(c, t, rng)
}

// An agent that takes FGD's node at every start runs the world `--placer fgd` runs: the same
// fragmentation rate and delays. Its return is minus the rate and the queued GPU share
// integrated over the run, in hours, and an episode closed early stops its world.
func TestDRREpisodeWithFGDsActionsIsFGD(t *testing.T) {
	tl := subTimeline(t, 0.9)
	// FGD's score cache depends on the tasks it was asked about; the episode asks the agent
	// only when a node is feasible, so the reference asks FGD only then too.
	tl.Resolve = func(string) (policy.Placer, error) { return feasibleOnly{&policy.FGD{}}, nil }
	w, err := tl.Build()
	if err != nil {
		t.Fatal(err)
	}
	want, err := w.Run(tl, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	fgd := &policy.FGD{}
	tl.Resolve = nil
	e, err := NewDRREpisode(tl, env.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	var ret float64
	for !e.Done() {
		ch, ok := fgd.Place(e.live, e.pl.Task(), e.rng)
		if !ok {
			t.Fatal("FGD finds no node for a decision the episode offers")
		}
		// FGD's GPUs too: the environment's least-fragmenting GPUs break exact ties otherwise.
		r, err := e.Step(env.Action{Candidate: ch.Node, GPUs: ch.GPUs})
		if err != nil {
			t.Fatal(err)
		}
		if r.Reward > 0 {
			t.Fatalf("step %d: reward %v > 0", e.Decisions, r.Reward)
		}
		ret += r.Reward
	}
	got := e.Result()
	// The rate's float sum differs in its last bits: the ticker's checks split the integral.
	if e.Decisions != len(want.Arrivals)-want.Rejected || math.Abs(got.FragRatioMeanPct-want.FragRatioMeanPct) > 1e-9 || got.Delays()["all"] != want.Delays()["all"] {
		t.Errorf("%d decisions, rate %v, delays %+v; fgd: %d arrivals, rate %v, delays %+v", e.Decisions, got.FragRatioMeanPct,
			got.Delays()["all"], len(want.Arrivals), want.FragRatioMeanPct, want.Delays()["all"])
	}
	if wantRet := -(e.rateHours + DRRQoSWeight*e.queuedGPUSeconds/3600/e.capGPU); math.Abs(ret-wantRet) > 1e-9 || ret >= 0 {
		t.Errorf("return %v, want %v", ret, wantRet)
	}

	e, err = NewDRREpisode(tl, env.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	e.Close()
	if _, err := e.Step(env.Action{Candidate: 0}); err == nil {
		t.Error("a closed episode stepped")
	}
}
