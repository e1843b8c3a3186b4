package eval

import (
	"fmt"
	"math/rand/v2"

	"github.com/schedrl/schedrl/policy"
	"github.com/schedrl/schedrl/sim"
)

// LearnedPlacer is a checkpoint's placer (f's) where the openb timed world wants a
// policy.Placer. A checkpoint placer keeps per-cluster state (the GPU demand offered so far,
// one of its features) and restarts it on another cluster, so the world's cluster (the first
// it is asked about) has a placer of its own and a defragmenter's planning copies share
// another. Its Score is FGD's, the fragment measure's own: a defragmenter ranks by it only the
// migration targets other than the network's choice. name names the policy in errors.
func LearnedPlacer(name string, f PolicyFactory) (policy.Placer, error) {
	live, err := f()
	if err != nil {
		return nil, fmt.Errorf("policy %q: %w", name, err)
	}
	copies, err := f()
	if err != nil {
		return nil, fmt.Errorf("policy %q: %w", name, err)
	}
	return &learnedPlacer{live: live, copies: copies}, nil
}

type learnedPlacer struct {
	live, copies sim.Placer
	liveID       uint64
	bound        bool
}

func (p *learnedPlacer) Name() string { return p.live.Name() }

func (p *learnedPlacer) Place(c *sim.Cluster, t sim.Task, rng *rand.Rand) (sim.Choice, bool) {
	if !p.bound {
		p.liveID, p.bound = c.ID(), true
	}
	if c.ID() == p.liveID {
		return p.live.Place(c, t, rng)
	}
	return p.copies.Place(c, t, rng)
}

func (*learnedPlacer) Score(c *sim.Cluster, t sim.Task, ch sim.Choice) float64 {
	return sim.FGDScore(c.FragDelta(t, ch))
}
