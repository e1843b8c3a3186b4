package policy

import (
	"math/rand/v2"

	"github.com/schedrl/schedrl/sim"
)

// Random places a task on a feasible node drawn uniformly with the caller's generator
// (best-fit GPUs there). Its score is 0 for every choice.
func init() {
	registerPlacer("random", func() Placer { return &random{} })
}

type random struct{ buf []int }

func (*random) Name() string { return "random" }

func (*random) Score(*sim.Cluster, sim.Task, sim.Choice) float64 { return 0 }

func (p *random) Place(c *sim.Cluster, t sim.Task, rng *rand.Rand) (sim.Choice, bool) {
	p.buf = c.FeasibleNodes(t, p.buf[:0])
	if len(p.buf) == 0 {
		return sim.Choice{}, false
	}
	i := p.buf[rng.IntN(len(p.buf))]
	gpus, _ := c.TightestGPUs(t, i)
	return sim.Choice{Node: i, GPUs: gpus}, true
}
