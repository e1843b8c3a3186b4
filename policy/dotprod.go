package policy

import "github.com/schedrl/schedrl/sim"

// DotProd scores a node by the dot product of its free (CPU, GPU) vector with the task's
// request, both normalised by the largest node spec, as the paper's simulator configures it
// ("merge" GPU dimension, "max" normalisation): score = (1 - dot/2) x 100, so the node whose
// free resources align least with the request (the tightest) wins; GPUs best-fit.
func init() {
	registerPlacer("dotprod", func() Placer { return &nodePolicy{name: "dotprod", score: dotProdScore} })
}

func dotProdScore(c *sim.Cluster, t sim.Task, node int) float64 {
	f := c.Free(node)
	dot := float64(f.CPU)/maxSpecCPU*float64(t.CPU)/maxSpecCPU +
		float64(f.TotalGPU())/maxSpecGPU*float64(t.TotalGPUMilli())/maxSpecGPU
	return float64(int64(maxScore * (1 - dot/2)))
}
