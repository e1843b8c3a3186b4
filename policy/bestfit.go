package policy

import "github.com/schedrl/schedrl/sim"

// BestFit prefers the node left with the least free CPU and GPU after placement, each
// normalised by the largest node spec and weighted equally; the score is the reference's
// integer (1 - leftover) x 100.
func init() {
	registerPlacer("bestfit", func() Placer { return &nodePolicy{name: "bestfit", score: bestFitScore} })
}

func bestFitScore(c *sim.Cluster, t sim.Task, node int) float64 {
	f := c.Free(node)
	left := 0.5*float64(f.CPU-t.CPU)/maxSpecCPU + 0.5*float64(f.TotalGPU()-t.TotalGPUMilli())/maxSpecGPU
	return float64(int64((1 - left) * maxScore))
}
