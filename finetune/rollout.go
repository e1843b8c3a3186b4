package finetune

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"

	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/nn"
)

// slot is one environment copy and the episode it is in. actions lists the episode's
// decisions so far, which is all a checkpoint needs to rebuild it (episodes are pure functions
// of their Draw).
type slot struct {
	draw    Draw
	ep      episode
	actions []int32
	ret     float64
	obs     env.Observation
	rows    compactor
}

// episodeEnd is a finished training episode's outcome: its return and, by environment, the
// GPU allocation (placement) or the state the plan left (defrag).
type episodeEnd struct {
	Return   float64
	AllocPct float64

	defrag       bool
	FragRatioPct float64 // fragment as a share of idle GPU
	PendingGPUs  float64 // pending GPU work placeable
	Migrations   int

	maifs                      bool
	AvgJCTHours, MakespanHours float64 // of the episode's jobs (maifs)
}

// pool steps environment copies on a fixed number of goroutines.
type pool struct {
	eps     episodeSource
	slots   []*slot
	workers int
}

// parallel runs f for every slot on the pool's goroutines and returns the first error.
func (p *pool) parallel(f func(i int, s *slot) error) error {
	return p.parallelOn(allSlots(len(p.slots)), f)
}

// parallelOn runs f(k, slot idx[k]) for every k on the pool's goroutines and returns the
// first error.
func (p *pool) parallelOn(idx []int, f func(k int, s *slot) error) error {
	errs := make([]error, len(idx))
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(p.workers, len(idx)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range next {
				errs[k] = f(k, p.slots[idx[k]])
			}
		}()
	}
	for k := range idx {
		next <- k
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// start puts s at the beginning of episode d, or at its decision after replaying actions.
func (p *pool) start(s *slot, d Draw, actions []int32) error {
	ep, err := p.eps.start(d)
	if err != nil {
		return err
	}
	// An episode left unfinished may hold a world's goroutine (defrag-online): stop it.
	if c, ok := s.ep.(interface{ Close() }); ok {
		c.Close()
	}
	// Buffers stay: the rollout's samples still refer to rows' numbering.
	s.draw, s.ep, s.ret = d, ep, 0
	for k, a := range actions {
		if ep.Done() {
			return fmt.Errorf("episode %+v: replay ended after %d of %d actions", d, k, len(actions))
		}
		r, err := ep.Step(env.Action{Candidate: int(a)})
		if err != nil {
			return fmt.Errorf("episode %+v: replaying action %d: %w", d, k, err)
		}
		s.ret += r.Reward
	}
	s.actions = append(s.actions[:0], actions...)
	return nil
}

// startFresh draws episodes for the slots in order (so the draws follow rng alone) until each
// has a decision pending, then builds them in parallel.
func (p *pool) startFresh(idx []int, rng *rand.Rand) error {
	for len(idx) > 0 {
		draws := make([]Draw, len(idx))
		for k := range idx {
			draws[k] = p.eps.draw(rng)
		}
		if err := p.parallelOn(idx, func(k int, s *slot) error { return p.start(s, draws[k], nil) }); err != nil {
			return err
		}
		var again []int
		for _, i := range idx {
			if p.slots[i].ep.Done() { // no task of this workload fits anywhere
				again = append(again, i)
			}
		}
		if len(again) == len(p.slots) {
			return fmt.Errorf("no episode of the mix has a feasible decision (last draw %+v)", draws[len(draws)-1])
		}
		idx = again
	}
	return nil
}

// rollout is one update's experience, step-major: sample t*envs+e.
type rollout struct {
	samples []sample
	envs    int
	last    []float32 // value of each env's observation after the final step
	ended   []episodeEnd
}

func newRollout(steps, envs int) *rollout {
	return &rollout{samples: make([]sample, steps*envs), envs: envs}
}

// collect runs the current policy for len(r.samples)/envs steps in every slot, sampling
// actions with rng from the masked distribution.
func (p *pool) collect(pol policy, r *rollout, rng *rand.Rand) error {
	envs := len(p.slots)
	steps := len(r.samples) / envs
	r.ended = r.ended[:0]
	for _, s := range p.slots {
		s.rows.forget() // the last rollout's samples are spent
	}
	all := allSlots(envs)
	refs := make([]*sample, envs)
	for t := range steps {
		for e := range envs {
			refs[e] = &r.samples[t*envs+e]
		}
		done, err := p.act(pol, all, refs, rng)
		if err != nil {
			return err
		}
		for _, e := range done {
			s := p.slots[e]
			end := s.ep.outcome()
			end.Return = s.ret
			r.ended = append(r.ended, end)
		}
		if err := p.startFresh(done, rng); err != nil {
			return err
		}
	}
	// Bootstrap values of where each env stands now.
	last := make([]sample, envs)
	nodeDim := pol.net.Arch.NodeDim
	if err := p.parallel(func(e int, s *slot) error {
		s.ep.Observe(&s.obs)
		s.rows.compact(&s.obs, nodeDim, &last[e], pol.tieScale())
		refs[e] = &last[e]
		return nil
	}); err != nil {
		return err
	}
	r.last = evalPolicy(pol, refs).value
	return nil
}

// act is one step of the slots idx (ascending): it observes them into out (one sample per
// slot of idx), samples their actions with one batched forward, steps them, and returns those
// whose episode ended, in order.
func (p *pool) act(pol policy, idx []int, out []*sample, rng *rand.Rand) ([]int, error) {
	nodeDim := pol.net.Arch.NodeDim
	if err := p.parallelOn(idx, func(k int, s *slot) error {
		s.ep.Observe(&s.obs)
		s.rows.compact(&s.obs, nodeDim, out[k], pol.tieScale())
		return nil
	}); err != nil {
		return nil, err
	}
	sc := evalPolicy(pol, out)
	w := sc.width
	nodes := make([]int, len(idx))
	for k, smp := range out {
		smp.action = sampleAction(sc.logp[k*w:(k+1)*w], smp.obs.Mask, rng)
		smp.logp, smp.value = sc.logp[k*w+smp.action], sc.value[k]
		// The row's nodes are the same to the network; only their tie preference differs.
		nodes[k] = pickNode(p.slots[idx[k]].rows.members[smp.action], p.slots[idx[k]].obs.TiePref, pol.tieScale(), rng)
	}
	ended := make([]bool, len(idx))
	if err := p.parallelOn(idx, func(k int, s *slot) error {
		res, err := s.ep.Step(env.Action{Candidate: nodes[k]})
		if err != nil {
			return fmt.Errorf("episode %+v step %d: %w", s.draw, len(s.actions), err)
		}
		s.actions = append(s.actions, int32(nodes[k]))
		s.ret += res.Reward
		out[k].reward, out[k].done = float32(res.Reward), res.Done
		ended[k] = res.Done
		return nil
	}); err != nil {
		return nil, err
	}
	var done []int
	for k, i := range idx {
		if ended[k] {
			done = append(done, i)
		}
	}
	return done, nil
}

// stagger moves slot i, by the policy's sampled decisions, until its episode is i/len(slots)
// of the way through (config's Stagger), so that rollouts mix every phase of an episode. The
// decisions are the episodes' own actions (a checkpoint replays them) but train nothing.
func (p *pool) stagger(pol policy, rng *rand.Rand) error {
	envs := len(p.slots)
	scratch := make([]sample, envs)
	for {
		var idx []int
		var out []*sample
		for i, s := range p.slots {
			pr, ok := s.ep.(interface{ Progress() float64 })
			if !ok {
				return fmt.Errorf("stagger: %T episodes do not report their progress", s.ep)
			}
			if !s.ep.Done() && pr.Progress() < float64(i)/float64(envs) {
				idx = append(idx, i)
				out = append(out, &scratch[i])
			}
		}
		if len(idx) == 0 {
			return nil
		}
		for _, i := range idx {
			p.slots[i].rows.forget() // each step's sample is spent at once
		}
		done, err := p.act(pol, idx, out, rng)
		if err != nil {
			return err
		}
		if err := p.startFresh(done, rng); err != nil { // the rest of its tasks fit nowhere
			return err
		}
	}
}

// scores is a no-grad forward over a padded batch, row-major with width columns.
type scores struct {
	logits, logp, value []float32
	width               int
}

// evalPolicy runs one no-grad forward over samples.
func evalPolicy(pol policy, samples []*sample) scores {
	b := newBatch(samples, pol.dev)
	defer b.drop()
	var sc scores
	nn.NoGrad(func() {
		s := nn.NewScope(pol.dev)
		defer s.Drop()
		d := pol.evaluate(s, b)
		sc = scores{logits: nn.HostFloats(d.logits, nil), logp: nn.HostFloats(d.logp, nil),
			value: nn.HostFloats(d.value, nil), width: b.width}
	})
	return sc
}

// sampleAction draws a feasible candidate from log-probabilities; masked candidates have
// probability exactly 0 here whatever their log-probability says.
func sampleAction(logp []float32, mask []bool, rng *rand.Rand) int {
	u := rng.Float64()
	var acc float64
	last := -1
	for i, ok := range mask {
		if !ok {
			continue
		}
		acc += math.Exp(float64(logp[i]))
		last = i
		if u < acc {
			return i
		}
	}
	return last // rounding left u above the total: the last feasible candidate
}
