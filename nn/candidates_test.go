package nn

import (
	"math/rand/v2"
	"testing"

	"github.com/sugarme/gotch"

	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/policy"
	"github.com/schedrl/schedrl/sim"
	"github.com/schedrl/schedrl/sim/simtest"
)

// fgdScorer wraps a placer and counts its choices that fall short of FGD's best score.
type fgdScorer struct {
	sim.Placer
	fgd              policy.FGD
	decisions, below int
}

func (f *fgdScorer) Place(c *sim.Cluster, t sim.Task, rng *rand.Rand) (sim.Choice, bool) {
	best, okBest := f.fgd.Place(c, t, nil)
	ch, ok := f.Placer.Place(c, t, rng)
	if ok && okBest {
		f.decisions++
		if f.fgd.Score(c, t, ch) < f.fgd.Score(c, t, best) {
			f.below++
		}
	}
	return ch, ok
}

// A checkpoint trained on the fgd-best action set is offered only FGD's best-score nodes by
// its placer; one trained on every feasible node is not restricted.
func TestPlacerOffersTheTrainedCandidates(t *testing.T) {
	p := simtest.Openb(t, "default", 0.6, 50)
	for _, tc := range []struct {
		candidates string
		restricted bool
	}{{env.CandidatesFGDBest, true}, {"", false}} {
		net := randomPlacementNet(t, tc.candidates)
		f := &fgdScorer{Placer: (&Policy{Net: net, name: "test", dev: gotch.CPU}).NewPlacer()}
		if _, _, err := p.Run(f, nil); err != nil {
			t.Fatal(err)
		}
		if f.decisions < 1000 {
			t.Fatalf("%q: only %d decisions", tc.candidates, f.decisions)
		}
		if got := f.below > 0; got == tc.restricted {
			t.Errorf("candidates %q: %d of %d choices below FGD's best score", tc.candidates, f.below, f.decisions)
		}
	}
}
