package nn

import "math/rand/v2"

// ArgmaxFeasible is the placer's greedy choice (uniform among exact ties), exported so that
// finetune's batched held-out evaluation decides exactly as `sim --policy ckpt:DIR` does.
func ArgmaxFeasible(logits []float32, mask []bool, rng *rand.Rand) int {
	return argmaxFeasible(logits, mask, rng)
}
