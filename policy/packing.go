package policy

import (
	"sort"

	"github.com/schedrl/schedrl/sim"
)

// Packing (GpuPacking) prefers, from high to low score: using GPUs already partly used (the
// fuller, the better), then nodes in use that must open the fewest fully free GPUs, and last
// fully idle nodes (fewer GPUs first). CPU-only tasks score 0 everywhere.
func init() {
	registerPlacer("packing", func() Placer { return &nodePolicy{name: "packing", score: packingScore} })
}

func packingScore(c *sim.Cluster, t sim.Task, node int) float64 {
	if t.NumGPU == 0 {
		return 0
	}
	f := c.Free(node)
	full := f.FullGPUs()
	if full == f.GPUs {
		return float64(max(maxScore/3-full, full))
	}
	order := make([]int, f.GPUs)
	for g := range order {
		order[g] = g
	}
	sort.SliceStable(order, func(a, b int) bool { return f.GPU[order[a]] < f.GPU[order[b]] })
	need, openFull := t.NumGPU, 0
	var freeRatio int64
	for _, g := range order {
		if need == 0 {
			break
		}
		if f.GPU[g] >= t.GPUMilli {
			need--
			freeRatio += f.GPU[g] * 100 / sim.MilliPerGPU
			if f.GPU[g] == sim.MilliPerGPU {
				openFull++
			}
		}
	}
	if openFull > 0 {
		return float64(max(maxScore/2-openFull, maxScore/3))
	}
	return float64(max(maxScore-freeRatio/10, maxScore/2))
}
