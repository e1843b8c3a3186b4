package policy

import (
	"math/rand/v2"

	"github.com/schedrl/schedrl/sim"
)

// Normalisation constants of the reference simulator: the largest node spec it assumes.
const (
	maxSpecCPU = 128000 // milli-cores
	maxSpecGPU = 8000   // milli-GPU
	maxScore   = 100
)

// nodeScorer scores a feasible node for a task; GPUs are then chosen best-fit.
type nodeScorer func(c *sim.Cluster, t sim.Task, node int) float64

// nodePolicy is a placer whose score depends on the node only, as most of the paper's
// baselines are.
type nodePolicy struct {
	name  string
	score nodeScorer
	buf   []int
}

func (p *nodePolicy) Name() string { return p.name }

func (p *nodePolicy) Score(c *sim.Cluster, t sim.Task, ch sim.Choice) float64 {
	return p.score(c, t, ch.Node)
}

func (p *nodePolicy) Place(c *sim.Cluster, t sim.Task, rng *rand.Rand) (sim.Choice, bool) {
	p.buf = c.FeasibleNodes(t, p.buf[:0])
	best, ok := argmax(c, p.buf, func(i int) float64 { return p.score(c, t, i) })
	if !ok {
		return sim.Choice{}, false
	}
	gpus, _ := c.TightestGPUs(t, best)
	return sim.Choice{Node: best, GPUs: gpus}, true
}

// argmax returns the node with the highest score; among equal scores the node first in the
// cluster's tie-break order wins, as in the paper's simulator (whose scheduler picks the
// lexicographically smallest of randomly prefixed node names).
func argmax(c *sim.Cluster, nodes []int, score func(int) float64) (int, bool) {
	best, chosen := 0.0, -1
	for _, i := range nodes {
		s := score(i)
		if chosen < 0 || s > best || (s == best && c.TieRank(i) < c.TieRank(chosen)) {
			best, chosen = s, i
		}
	}
	return chosen, chosen >= 0
}
