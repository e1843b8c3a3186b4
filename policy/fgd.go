package policy

import (
	"math/rand/v2"

	"github.com/schedrl/schedrl/sim"
)

// FGD (fragmentation gradient descent) places a task where it raises its node's fragment the
// least; a GPU-sharing task tries each GPU of the node. The score is the reference's
// integer sigmoid((fragment before - after) / 1000) x 100, so changes within a few tens of
// milli-GPU tie; within a node the first GPU with the best score wins.
func init() {
	registerPlacer("fgd", func() Placer { return &FGD{} })
}

// FGD is the fragmentation-gradient-descent placer. It caches each node's best score per task
// shape, keyed by the node's version, so a decision only rescores nodes that changed.
type FGD struct {
	clusterID uint64
	shapes    map[fgdShape]int
	cache     [][]fgdEntry // [shape][node]
	buf       []int
}

type fgdShape struct {
	cpu, milli int64
	numGPU     int
}

type fgdEntry struct {
	version uint64
	score   float64
	gpus    sim.GPUSet
}

func (*FGD) Name() string { return "fgd" }

// Score is the FGD score of a feasible choice.
func (*FGD) Score(c *sim.Cluster, t sim.Task, ch sim.Choice) float64 {
	return sim.FGDScore(c.FragDelta(t, ch))
}

// nodeBest is node i's best score and the first GPUs achieving it.
func nodeBest(c *sim.Cluster, t sim.Task, i int) fgdEntry {
	gpus, delta, ok := c.LeastFragmentingGPUs(t, i, negScore)
	if !ok {
		return fgdEntry{score: -1}
	}
	return fgdEntry{score: sim.FGDScore(delta), gpus: gpus}
}

// negScore ranks a fragment change by FGD's score, best first.
func negScore(delta float64) float64 { return -sim.FGDScore(delta) }

// Place returns the feasible choice with the best FGD score, ties between nodes going to the
// node first in the cluster's tie order; rng is not used.
func (p *FGD) Place(c *sim.Cluster, t sim.Task, rng *rand.Rand) (sim.Choice, bool) {
	if p.clusterID != c.ID() || p.shapes == nil {
		p.clusterID, p.shapes, p.cache = c.ID(), map[fgdShape]int{}, nil
	}
	key := fgdShape{t.CPU, t.GPUMilli, t.NumGPU}
	k, ok := p.shapes[key]
	if !ok {
		k = len(p.cache)
		p.shapes[key] = k
		p.cache = append(p.cache, make([]fgdEntry, c.NumNodes()))
	}
	row := p.cache[k]
	p.buf = c.FeasibleNodes(t, p.buf[:0])
	best, ok := argmax(c, p.buf, func(i int) float64 {
		if v := c.NodeVersion(i); row[i].version != v {
			row[i] = nodeBest(c, t, i)
			row[i].version = v
		}
		return row[i].score
	})
	if !ok {
		return sim.Choice{}, false
	}
	return sim.Choice{Node: best, GPUs: row[best].gpus}, true
}
