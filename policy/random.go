package policy

import (
	"math/rand/v2"

	"github.com/schedrl/schedrl/sim"
)

// Random places a task on a feasible node drawn uniformly with the caller's generator; a
// GPU-sharing task goes to a GPU drawn uniformly among those with room (as the paper runs
// Random), whole GPUs are the lowest-indexed free ones. Its score is 0 for every choice.
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
	if !t.Sharing() {
		gpus, _ := c.TightestGPUs(t, i)
		return sim.Choice{Node: i, GPUs: gpus}, true
	}
	f := c.Free(i)
	var room []int
	for g := 0; g < f.GPUs; g++ {
		if f.GPU[g] >= t.GPUMilli {
			room = append(room, g)
		}
	}
	return sim.Choice{Node: i, GPUs: sim.NewGPUSet(room[rng.IntN(len(room))])}, true
}
