package policy

import "github.com/schedrl/schedrl/sim"

// FirstFit puts a task on the first feasible node in the cluster's tie order (the scheduler's
// seeded node order), its GPUs best fit. It is not one of the paper's baselines: it measures
// what a consistent node preference alone is worth, the part of FGD a fine-tuned policy's tie
// prior supplies (docs/finetune.md).
func init() {
	registerPlacer("firstfit", func() Placer { return &nodePolicy{name: "firstfit", score: firstFitScore} })
}

// firstFitScore ties every feasible node, so the tie order decides.
func firstFitScore(*sim.Cluster, sim.Task, int) float64 { return 0 }
