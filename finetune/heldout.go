package finetune

import (
	"math/rand/v2"

	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/nn"
	"github.com/schedrl/schedrl/sim"
)

// heldOut is a held-out evaluation: greedy decisions on whole-cluster episodes. Placement
// reports the GPU allocation, defrag the plans' outcomes.
type heldOut struct {
	Seeds    []uint64    `json:"seeds"`
	AllocPct []float64   `json:"alloc_gpu_pct,omitempty"`
	Mean     float64     `json:"mean_alloc_gpu_pct"`
	Defrag   *defragHeld `json:"defrag,omitempty"`
	MAIFS    *maifsHeld  `json:"maifs,omitempty"`
	DRR      *drrHeld    `json:"drr,omitempty"`
}

func grow(buf *[]float32, n int) []float32 {
	if cap(*buf) < n {
		*buf = make([]float32, n)
	}
	*buf = (*buf)[:n]
	return *buf
}

// evaluate runs the network greedily (the highest-scoring feasible node) on the first trace's
// workload for each seed on size nodes (0: all), all seeds stepping together with one batched forward
// per step over deduplicated rows, and reports the GPU allocation when the last task has arrived.
func evaluate(pol policy, eps *episodes, seeds []uint64, size, workers int) (heldOut, error) {
	slots, err := greedy(pol, eps, seeds, size, workers)
	if err != nil {
		return heldOut{}, err
	}
	h := heldOut{Seeds: seeds}
	for _, s := range slots {
		a := s.ep.outcome().AllocPct
		h.AllocPct = append(h.AllocPct, a)
		h.Mean += a / float64(len(seeds))
	}
	return h, nil
}

// greedy runs the placement network greedily on the first trace's episode of each seed on
// size nodes and returns the finished slots, in seed order.
func greedy(pol policy, eps episodeSource, seeds []uint64, size, workers int) ([]*slot, error) {
	p := &pool{eps: eps, slots: make([]*slot, len(seeds)), workers: workers}
	for i := range p.slots {
		p.slots[i] = &slot{}
	}
	if err := p.parallel(func(i int, s *slot) error { return p.start(s, Draw{Seed: seeds[i], Size: size}, nil) }); err != nil {
		return nil, err
	}
	samples := make([]sample, len(seeds))
	nodeLogits := make([][]float32, len(seeds))
	// Ties break with each workload's policy stream, as sim's runner hands it to a placer.
	rngs := make([]*rand.Rand, len(seeds))
	for i, s := range seeds {
		rngs[i] = sim.RNG(s, sim.StreamPolicy)
	}
	for {
		var active []int
		for i, s := range p.slots {
			if !s.ep.Done() {
				active = append(active, i)
			}
		}
		if len(active) == 0 {
			break
		}
		refs := make([]*sample, len(active))
		sub := &pool{eps: eps, workers: workers}
		for k, i := range active {
			sub.slots = append(sub.slots, p.slots[i])
			refs[k] = &samples[i]
		}
		if err := sub.parallel(func(k int, s *slot) error {
			s.ep.Observe(&s.obs)
			s.rows.forget() // each step's batch is its own
			s.rows.compact(&s.obs, pol.net.Arch.NodeDim, refs[k], pol.tieScale())
			return nil
		}); err != nil {
			return nil, err
		}
		sc := evalPolicy(pol, refs)
		w := sc.width
		if err := sub.parallel(func(k int, s *slot) error {
			// Back to one logit per node, so ties break over nodes as the placer's do.
			logits := grow(&nodeLogits[active[k]], s.obs.NumNodes)
			for r, members := range s.rows.members {
				for _, i := range members {
					logits[i] = sc.logits[k*w+r]
				}
			}
			a := nn.ArgmaxFeasible(pol.net.Arch.WithTiePrior(logits, s.obs.TiePref), s.obs.Mask, rngs[active[k]])
			_, err := s.ep.Step(env.Action{Candidate: a})
			return err
		}); err != nil {
			return nil, err
		}
	}
	return p.slots, nil
}
