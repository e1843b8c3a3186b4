package env

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/schedrl/schedrl/fungible"
)

// turnsPolicy decodes with DecodeTurns, each agent taking its best-scoring open candidate, and
// checks at every decision point that this is Decode's plan: the open sets a policy-gradient
// update masks with are the decoder's own.
type turnsPolicy struct {
	t      *testing.T
	e      *MAIFS
	sc     randScorer
	points int
}

func (p *turnsPolicy) Plan(l *fungible.Ledger, _ fungible.SpeedModel, s fungible.RoundState) (fungible.Plan, error) {
	o, err := p.e.Observe(l, s)
	if err != nil {
		return fungible.Plan{}, err
	}
	sc, _ := p.sc.ScoreMAIFS(o)
	want, err := p.e.Decode(l, o, sc, true)
	if err != nil {
		return fungible.Plan{}, err
	}
	plan, choice, open, err := p.e.DecodeTurns(l, o, sc.Order, func(i int, open []bool) int {
		best := -1
		for k, ok := range open {
			if ok && (best < 0 || sc.Logits[o.CandStart[i]+k] > sc.Logits[o.CandStart[i]+best]) {
				best = k
			}
		}
		return best
	})
	if err != nil {
		return fungible.Plan{}, err
	}
	if !slices.Equal(choice, want.Choice) {
		p.t.Fatalf("at %g s: DecodeTurns chose %v, Decode %v", s.Now, choice, want.Choice)
	}
	if len(plan.Ledger.Jobs()) != len(want.Plan.Ledger.Jobs()) {
		p.t.Fatalf("at %g s: DecodeTurns started %d jobs, Decode %d", s.Now, len(plan.Ledger.Jobs()), len(want.Plan.Ledger.Jobs()))
	}
	for i, m := range open {
		if m == nil || (choice[i] > 0 && !m[choice[i]]) {
			p.t.Fatalf("at %g s: agent %d: open set %v, choice %d", s.Now, i, m, choice[i])
		}
	}
	p.points++
	return want.Plan, nil
}

func TestDecodeTurnsIsTheDecoder(t *testing.T) {
	e, work := maifsWorld(t, "8:8:8", 60, 500, 5)
	p := &turnsPolicy{t: t, e: e, sc: randScorer{rand.New(rand.NewPCG(1, 2))}}
	if _, err := fungible.Run(e.Cluster(), e.Model(), work, fungible.RunConfig{Policy: p, Order: srtf(t)}); err != nil {
		t.Fatal(err)
	}
	if p.points < 50 {
		t.Fatalf("%d decision points", p.points)
	}
	// A choice that is not open is refused by agent.
	o, err := e.Observe(fungible.NewLedger(e.Cluster()), fungible.RoundState{Present: []fungible.JobStatus{{Job: work[0]}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := e.DecodeTurns(fungible.NewLedger(e.Cluster()), o, []float32{0}, func(int, []bool) int { return 99 }); err == nil {
		t.Fatal("a candidate out of range was taken")
	}
}
