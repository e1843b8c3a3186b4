package finetune

import (
	"math"
	"math/rand/v2"

	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/nn"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// policy is a network on its device, sampled at a temperature (finetune.temperature).
type policy struct {
	net         *nn.Net
	dev         gotch.Device
	temperature float64
}

// tieScale is the weight of a node's tie preference in the sampled distribution.
func (p policy) tieScale() float64 { return p.net.Arch.TiePrior / p.temperature }

// updateStats are one update's loss terms and diagnostics, averaged over its mini-batches.
type updateStats struct {
	PolicyLoss, ValueLoss, Entropy float64
	KLRef, ApproxKL, ClipFrac      float64
	GradNorm                       float64
	ExplainedVar                   float64 // of the rollout's returns by the critic
	Epochs                         int
	n                              int
}

func (u *updateStats) add(o updateStats) {
	u.PolicyLoss += o.PolicyLoss
	u.ValueLoss += o.ValueLoss
	u.Entropy += o.Entropy
	u.KLRef += o.KLRef
	u.ApproxKL += o.ApproxKL
	u.ClipFrac += o.ClipFrac
	u.GradNorm += o.GradNorm
	u.n++
}

func (u *updateStats) mean() updateStats {
	if u.n == 0 {
		return *u
	}
	k := float64(u.n)
	return updateStats{PolicyLoss: u.PolicyLoss / k, ValueLoss: u.ValueLoss / k, Entropy: u.Entropy / k,
		KLRef: u.KLRef / k, ApproxKL: u.ApproxKL / k, ClipFrac: u.ClipFrac / k, GradNorm: u.GradNorm / k, Epochs: u.Epochs}
}

// learner holds what an update changes: the network, its optimiser and the frozen reference
// policy the KL penalty pulls towards.
type learner struct {
	cfg config.FinetuneConfig
	pol policy
	opt *nn.Adam
	ref *policy // nil: no KL penalty (from scratch)
}

// refLogp computes the reference policy's masked log-probabilities for every sample, once per
// update, so the mini-batches only run the trained network. They use the samples' row weights,
// so the reference is scored under the trained policy's tie prior.
func (l *learner) refLogp(r *rollout) ([][]float32, error) {
	out := make([][]float32, len(r.samples))
	const chunk = 256
	refs := make([]*sample, 0, chunk)
	for lo := 0; lo < len(r.samples); lo += chunk {
		refs = refs[:0]
		for i := lo; i < min(lo+chunk, len(r.samples)); i++ {
			refs = append(refs, &r.samples[i])
		}
		sc := evalPolicy(*l.ref, refs)
		for k, s := range refs {
			out[lo+k] = sc.logp[k*sc.width : k*sc.width+s.obs.NumNodes]
		}
	}
	return out, nil
}

// update runs the epochs of mini-batch PPO over r at learning rate lr and KL coefficient kl.
func (l *learner) update(r *rollout, lr, kl float64, rng *rand.Rand) (updateStats, error) {
	cfg := l.cfg
	value := make([]float32, len(r.samples))
	reward := make([]float32, len(r.samples))
	done := make([]bool, len(r.samples))
	for i := range r.samples {
		value[i], reward[i], done[i] = r.samples[i].value, r.samples[i].reward, r.samples[i].done
	}
	adv, ret := advantages(reward, value, done, r.last, r.envs, cfg.Gamma, cfg.GAELambda)
	var ref [][]float32
	if l.ref != nil && kl > 0 {
		var err error
		if ref, err = l.refLogp(r); err != nil {
			return updateStats{}, err
		}
	}
	n := len(r.samples)
	mb := n / cfg.Minibatches
	var total updateStats
	for epoch := range cfg.Epochs {
		total.Epochs = epoch + 1
		perm := rng.Perm(n)
		var epochKL float64
		for k := range cfg.Minibatches {
			idx := perm[k*mb : (k+1)*mb]
			if k == cfg.Minibatches-1 {
				idx = perm[k*mb:]
			}
			st, err := l.minibatch(r, idx, adv, ret, ref, lr, kl)
			if err != nil {
				return updateStats{}, err
			}
			epochKL += st.ApproxKL
			total.add(st)
		}
		if cfg.TargetKL > 0 && epochKL/float64(cfg.Minibatches) > cfg.TargetKL {
			break
		}
	}
	out := total.mean()
	out.ExplainedVar = explainedVariance(value, ret)
	return out, nil
}

// minibatch takes one gradient step on the samples idx.
func (l *learner) minibatch(r *rollout, idx []int, adv, ret []float32, ref [][]float32, lr, kl float64) (updateStats, error) {
	cfg := l.cfg
	dev := l.pol.dev
	samples := make([]*sample, len(idx))
	actions := make([]int64, len(idx))
	oldLogp := make([]float32, len(idx))
	oldV := make([]float32, len(idx))
	a := make([]float32, len(idx))
	rt := make([]float32, len(idx))
	for k, i := range idx {
		s := &r.samples[i]
		samples[k], actions[k], oldLogp[k], oldV[k], a[k], rt[k] = s, int64(s.action), s.logp, s.value, adv[i], ret[i]
	}
	if cfg.NormAdv && len(a) > 1 {
		m, v := meanVar(a)
		sd := math.Sqrt(v * float64(len(a)) / float64(len(a)-1))
		for k := range a {
			a[k] = float32((float64(a[k]) - m) / (sd + 1e-8))
		}
	}
	b := newBatch(samples, dev)
	defer b.drop()
	var keep []*ts.Tensor // every intermediate, dropped after the step
	hold := func(t *ts.Tensor) *ts.Tensor { keep = append(keep, t); return t }
	defer func() {
		for _, t := range keep {
			t.MustDrop()
		}
	}()
	vec := func(x []float32) *ts.Tensor { return hold(nn.HostTensor(x, []int64{int64(len(x))}, dev)) }
	act := hold(nn.HostTensor(actions, []int64{int64(len(idx)), 1}, dev))

	out := l.pol.net.Forward(b.in)
	// The value loss is taken in the head's own units (returns / ValueScale): in return units
	// its gradient would swamp the policy's in the shared encoder and under clipping.
	vs := l.pol.net.Arch.ValueScale
	newV := hold(hold(out.Value).MustDivScalar(ts.FloatScalar(vs), false))
	logp := hold(b.logProbs(hold(out.Logits), l.pol.temperature))
	maskF := hold(b.in.Mask.MustTotype(gotch.Float, false))
	newLogp := hold(hold(logp.MustGather(1, act, false, false)).MustView([]int64{int64(len(idx))}, false))
	logRatio := hold(newLogp.MustSub(vec(oldLogp), false))
	ratio := hold(logRatio.MustExp(false))

	advT := vec(a)
	pg1 := hold(hold(ratio.MustMul(advT, false)).MustNeg(false))
	pg2 := hold(hold(hold(ratio.MustClamp(ts.FloatScalar(1-cfg.ClipCoef), ts.FloatScalar(1+cfg.ClipCoef), false)).MustMul(advT, false)).MustNeg(false))
	pgLoss := hold(hold(pg1.MustMaximum(pg2, false)).MustMean(gotch.Float, false))

	for k := range rt {
		rt[k], oldV[k] = rt[k]/float32(vs), oldV[k]/float32(vs)
	}
	retT, oldVT := vec(rt), vec(oldV)
	vErr := hold(hold(newV.MustSub(retT, false)).MustSquare(false))
	if cfg.ClipVLoss {
		delta := hold(hold(newV.MustSub(oldVT, false)).MustClamp(ts.FloatScalar(-cfg.ClipCoef), ts.FloatScalar(cfg.ClipCoef), false))
		clipped := hold(hold(oldVT.MustAdd(delta, false)).MustSub(retT, false))
		vErr = hold(vErr.MustMaximum(hold(clipped.MustSquare(false)), false))
	}
	vLoss := hold(hold(vErr.MustMean(gotch.Float, false)).MustMulScalar(ts.FloatScalar(0.5), false))

	probs := hold(logp.MustExp(false))
	plogp := hold(hold(probs.MustMul(logp, false)).MustMul(maskF, false))
	entropy := hold(hold(hold(plogp.MustSumDimIntlist([]int64{1}, false, gotch.Float, false)).MustMean(gotch.Float, false)).MustNeg(false))

	loss := hold(pgLoss.MustSub(hold(entropy.MustMulScalar(ts.FloatScalar(cfg.EntCoef), false)), false))
	loss = hold(loss.MustAdd(hold(vLoss.MustMulScalar(ts.FloatScalar(cfg.VFCoef), false)), false))
	var klRef float64
	if ref != nil {
		refRows := make([][]float32, len(idx))
		for k, i := range idx {
			refRows[k] = ref[i]
		}
		refLogp := hold(paddedRows(refRows, b.width, dev))
		diff := hold(refLogp.MustSub(logp, false))
		terms := hold(hold(hold(refLogp.MustExp(false)).MustMul(diff, false)).MustMul(maskF, false))
		klT := hold(hold(terms.MustSumDimIntlist([]int64{1}, false, gotch.Float, false)).MustMean(gotch.Float, false))
		loss = hold(loss.MustAdd(hold(klT.MustMulScalar(ts.FloatScalar(kl), false)), false))
		klRef = scalar(klT)
	}

	l.opt.ZeroGrad()
	loss.MustBackward()
	norm := l.opt.ClipGradNorm(cfg.MaxGradNorm)
	l.opt.Step(lr)

	var approxKL, clipFrac float64
	ts.NoGrad(func() {
		// (ratio - 1) - log ratio: the low-variance KL estimator CleanRL logs.
		k := hold(hold(hold(ratio.MustSubScalar(ts.FloatScalar(1), false)).MustSub(logRatio, false)).MustMean(gotch.Float, false))
		approxKL = scalar(k)
		off := hold(hold(hold(ratio.MustSubScalar(ts.FloatScalar(1), false)).MustAbs(false)).MustGt(ts.FloatScalar(cfg.ClipCoef), false))
		clipFrac = scalar(hold(hold(off.MustTotype(gotch.Float, false)).MustMean(gotch.Float, false)))
	})
	return updateStats{PolicyLoss: scalar(pgLoss), ValueLoss: scalar(vLoss), Entropy: scalar(entropy),
		KLRef: klRef, ApproxKL: approxKL, ClipFrac: clipFrac, GradNorm: norm}, nil
}

// paddedRows stacks rows of up to width values into [B,width], zero-padded; the caller's
// mask keeps the padding out of every sum.
func paddedRows(rows [][]float32, width int, dev gotch.Device) *ts.Tensor {
	data := make([]float32, len(rows)*width)
	for i, r := range rows {
		copy(data[i*width:], r)
	}
	return nn.HostTensor(data, []int64{int64(len(rows)), int64(width)}, dev)
}

func scalar(t *ts.Tensor) float64 {
	var v float64
	ts.NoGrad(func() { v = t.Float64Values(false)[0] })
	return v
}
