package policy

import (
	"math"

	"github.com/schedrl/schedrl/sim"
)

// cos-sim: visit nodes in decreasing fragment; on each evict the task whose (CPU, GPU)
// request is least aligned (lowest cosine similarity) with the node's free (CPU, GPU) vector,
// both normalised by the largest node spec, until budget tasks are out; then re-place them.
func init() {
	registerDefragger("cos-sim", func() Defragmenter {
		return &evictThenReplace{name: "cos-sim", pick: func(c *sim.Cluster, budget int, log *sim.LogWriter) ([]sim.Placement, error) {
			tasks := byNode(c)
			var victims []sim.Placement
			for _, i := range nodesByFragment(c) {
				if len(victims) >= budget {
					break
				}
				if c.NodeFrag(i) == 0 || len(tasks[i]) == 0 {
					continue
				}
				f := c.Free(i)
				fc, fg := float64(f.CPU)/maxSpecCPU, float64(f.TotalGPU())/maxSpecGPU
				best, bestSim := -1, math.Inf(1)
				for k, p := range tasks[i] {
					rc, rg := float64(p.Task.CPU)/maxSpecCPU, float64(p.Task.TotalGPUMilli())/maxSpecGPU
					norm := math.Hypot(fc, fg) * math.Hypot(rc, rg)
					cos := 0.0
					if norm > 0 {
						cos = (fc*rc + fg*rg) / norm
					}
					if cos < bestSim {
						best, bestSim = k, cos
					}
				}
				victims = append(victims, tasks[i][best])
			}
			return victims, evict(c, victims, log)
		}}
	})
}
