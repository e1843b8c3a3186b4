package policy

import "github.com/schedrl/schedrl/sim"

// Clustering (GpuClustering) puts a GPU task with tasks of the same GPU request class
// (GPU-sharing, or k whole GPUs): nodes running only that class first, then nodes running it
// among others, then idle nodes, then nodes with other classes only; within a band the fuller
// node scores higher. CPU-only tasks score 0 everywhere (random feasible node).
func init() {
	registerPlacer("clustering", func() Placer { return &nodePolicy{name: "clustering", score: clusteringScore} })
}

func clusteringScore(c *sim.Cluster, t sim.Task, node int) float64 {
	if t.NumGPU == 0 {
		return 0
	}
	class := t.NumGPU
	if t.Sharing() {
		class = 0
	}
	classes := c.TaskClasses(node)
	present := 0
	for _, n := range classes {
		if n > 0 {
			present++
		}
	}
	// Integer arithmetic as in the reference: a quarter of the range, scaled by GPU in use.
	fill := int64(maxScore/4) * (maxSpecGPU - c.Free(node).TotalGPU()) / maxSpecGPU
	var band int64
	switch {
	case classes[class] > 0 && present == 1:
		band = maxScore * 3 / 4
	case classes[class] > 0:
		band = maxScore * 2 / 4
	case present == 0:
		band = maxScore / 4
	}
	return float64(fill + band)
}
