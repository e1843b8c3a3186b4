package online

import (
	"math/rand/v2"

	"github.com/schedrl/schedrl/defrag"
	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/policy"
)

// The static defrag package's heuristics (greedy, cos-sim, frag-one-pod, frag-multi-pod),
// run on the snapshot as `defrag plan` runs them on a snapshot file.
func init() {
	for _, name := range policy.Defragmenters() {
		register(name, func() Planner {
			d, _ := policy.NewDefragmenter(name)
			return FromDefrag(defrag.Heuristic{D: d}, env.DefragOptions{})
		})
	}
}

// FromDefrag plans with a static-snapshot planner (a heuristic, or a trained network's agent
// wired in by the caller) on the snapshot, with opts' rewards and the invocation's budget.
func FromDefrag(p defrag.Planner, opts env.DefragOptions) Planner { return static{p, opts} }

type static struct {
	p    defrag.Planner
	opts env.DefragOptions
}

func (s static) Name() string { return s.p.Name() }

func (s static) Plan(sn Snapshot, budget int, rng *rand.Rand) ([]defrag.Migration, error) {
	opts := s.opts
	opts.Budget = budget
	return s.p.Propose(defrag.Problem{Cluster: sn.Cluster, Pending: sn.Waiting, Placer: sn.Placer, Options: opts}, 0, rng)
}
