package finetune

import "math"

// advantages computes generalised advantage estimates and returns (advantage + value) for a
// rollout of steps x envs samples stored step-major (index t*envs + e). done[i] marks that
// sample i ended its episode, so nothing flows back across it; last holds the value of each
// env's observation after the final step.
func advantages(reward, value []float32, done []bool, last []float32, envs int, gamma, lambda float64) (adv, ret []float32) {
	n := len(reward)
	adv, ret = make([]float32, n), make([]float32, n)
	steps := n / envs
	for e := range envs {
		var gae float64
		for t := steps - 1; t >= 0; t-- {
			i := t*envs + e
			next := float64(last[e])
			if t < steps-1 {
				next = float64(value[i+envs])
			}
			keep := 1.0
			if done[i] {
				keep = 0
			}
			delta := float64(reward[i]) + gamma*next*keep - float64(value[i])
			gae = delta + gamma*lambda*keep*gae
			adv[i] = float32(gae)
			ret[i] = float32(gae + float64(value[i]))
		}
	}
	return adv, ret
}

// explainedVariance is 1 - Var(target - pred) / Var(target): 1 is a perfect critic, 0 one no
// better than a constant, NaN when the targets do not vary.
func explainedVariance(pred, target []float32) float64 {
	_, vt := meanVar(target)
	if vt == 0 {
		return math.NaN()
	}
	diff := make([]float32, len(pred))
	for i := range pred {
		diff[i] = target[i] - pred[i]
	}
	_, vd := meanVar(diff)
	return 1 - vd/vt
}

func meanVar(x []float32) (mean, variance float64) {
	if len(x) == 0 {
		return 0, 0
	}
	for _, v := range x {
		mean += float64(v)
	}
	mean /= float64(len(x))
	for _, v := range x {
		d := float64(v) - mean
		variance += d * d
	}
	return mean, variance / float64(len(x))
}
