package defrag

import (
	"slices"
	"testing"

	"github.com/schedrl/schedrl/env"
)

// TestGreedyRanksByRowGains: the defrag observation holds what the greedy expert decides by.
// In stage one, frag_gain + other_gain of a task's row is the fragment its best migration
// removes, and greedy moves a task whose sum is the largest; in stage two, the sum over a
// target's row is the move's fragment change, and greedy's target has the largest. So a
// network over these rows can imitate greedy exactly, up to ties.
func TestGreedyRanksByRowGains(t *testing.T) {
	spec, err := env.SpecOf(env.DefragName)
	if err != nil {
		t.Fatal(err)
	}
	nf := len(spec.Node)
	gain, other := slices.Index(spec.Node, "frag_gain"), slices.Index(spec.Node, "other_gain")
	if gain < 0 || other < 0 {
		t.Fatalf("spec %s lacks frag_gain or other_gain", spec.Version)
	}
	checked := 0
	for seed := range uint64(30) {
		pr := randomProblem(t, seed)
		p, err := Best(pr, Heuristic{D: mustDefragmenter(t, "greedy")}, 1, seed)
		if err != nil {
			t.Fatal(err)
		}
		_, err = ExpertActions(pr, p, func(l Labelled) {
			o := l.Obs
			sum := func(i int) float32 { return o.Nodes[i*nf+gain] + o.Nodes[i*nf+other] }
			best := float32(-1e9)
			for i := range o.NumNodes {
				if o.Mask[i] && o.Nodes[i*nf+nf-1] == 0 { // STOP's row is all zero but its flag
					best = max(best, sum(i))
				}
			}
			if a := l.Action.Candidate; o.Nodes[a*nf+nf-1] == 0 && sum(a) < best-1e-5 {
				t.Fatalf("seed %d stage %d: greedy took candidate %d with gains %v, the best row has %v", seed, o.Stage, a, sum(a), best)
			}
			checked++
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if checked < 100 {
		t.Fatalf("only %d greedy decisions checked", checked)
	}
}
