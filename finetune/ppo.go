package finetune

import (
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
	out, err := epochs(cfg, len(r.samples), rng, func(idx []int) (updateStats, error) {
		return l.minibatch(r, idx, adv, ret, ref, lr, kl)
	})
	out.ExplainedVar = explainedVariance(value, ret)
	return out, err
}

// epochs runs PPO's epochs over n samples in cfg.Minibatches shuffled mini-batches (the last
// takes the remainder), each a gradient step by minibatch, and returns the steps' mean.
// Early stop on target_kl after a whole epoch, as CleanRL does, but on the mean approx_kl of
// the epoch's mini-batches where CleanRL takes its last mini-batch's.
func epochs(cfg config.FinetuneConfig, n int, rng *rand.Rand, minibatch func(idx []int) (updateStats, error)) (updateStats, error) {
	size := n / cfg.Minibatches
	var total updateStats
	for epoch := range cfg.Epochs {
		total.Epochs = epoch + 1
		perm := rng.Perm(n)
		var epochKL float64
		for k := range cfg.Minibatches {
			idx := perm[k*size : (k+1)*size]
			if k == cfg.Minibatches-1 {
				idx = perm[k*size:]
			}
			st, err := minibatch(idx)
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
	return total.mean(), nil
}

// minibatch takes one gradient step on the samples idx: the update of CleanRL's ppo.py,
// one named step per loss term, plus the KL penalty towards the pretrained policy,
//
//	loss = L_clip - ent_coef H + vf_coef L_V + kl KL(π_ref ‖ π).
//
// It runs pinned to one OS thread (nn.WithGrad), so that all of it uses the configured
// intra-op thread count.
func (l *learner) minibatch(r *rollout, idx []int, adv, ret []float32, ref [][]float32, lr, kl float64) (st updateStats, err error) {
	nn.WithGrad(func() { st, err = l.gradStep(r, idx, adv, ret, ref, lr, kl) })
	return st, err
}

func (l *learner) gradStep(r *rollout, idx []int, adv, ret []float32, ref [][]float32, lr, kl float64) (updateStats, error) {
	cfg := l.cfg
	mb := pick(r, idx, adv, ret, l.pol.net.Arch.ValueScale, cfg.NormAdv)
	b := newBatch(mb.samples, l.pol.dev)
	defer b.drop()
	s := nn.NewScope(l.pol.dev)
	defer s.Drop()

	d := l.pol.evaluate(s, b)
	logRatio := s.Own(d.logProb(s, mb.actions).MustSub(s.Floats(mb.oldLogp), false))
	ratio := s.Own(logRatio.MustExp(false))
	mask := s.Own(b.in.Mask.MustTotype(gotch.Float, false))

	pgLoss := clippedSurrogate(s, ratio, s.Floats(mb.adv), cfg.ClipCoef)
	vLoss := valueLoss(s, s.Own(d.value.MustDivScalar(ts.FloatScalar(l.pol.net.Arch.ValueScale), false)),
		s.Floats(mb.ret), s.Floats(mb.oldValue), cfg.ClipCoef, cfg.ClipVLoss)
	entropy := d.entropy(s, mask)
	loss := s.Own(pgLoss.MustSub(s.Own(entropy.MustMulScalar(ts.FloatScalar(cfg.EntCoef), false)), false))
	loss = s.Own(loss.MustAdd(s.Own(vLoss.MustMulScalar(ts.FloatScalar(cfg.VFCoef), false)), false))
	var klRef float64
	if ref != nil {
		klT := klToReference(s, s.Own(paddedRows(rowsOf(ref, idx), b.width, l.pol.dev)), d.logp, mask)
		loss = s.Own(loss.MustAdd(s.Own(klT.MustMulScalar(ts.FloatScalar(kl), false)), false))
		klRef = scalar(klT)
	}
	approxKL, clipFrac := ratioDiagnostics(s, ratio, logRatio, cfg.ClipCoef)

	l.opt.ZeroGrad()
	loss.MustBackward()
	norm := l.opt.ClipGradNorm(cfg.MaxGradNorm)
	l.opt.Step(lr)
	return updateStats{PolicyLoss: scalar(pgLoss), ValueLoss: scalar(vLoss), Entropy: scalar(entropy),
		KLRef: klRef, ApproxKL: approxKL, ClipFrac: clipFrac, GradNorm: norm}, nil
}

// clippedSurrogate is PPO's policy loss (CleanRL's pg_loss), with r = π(a|s) / π_old(a|s):
//
//	L_clip = mean(max(-A r, -A clip(r, 1-ε, 1+ε))).
func clippedSurrogate(s *nn.Scope, ratio, adv *ts.Tensor, clip float64) *ts.Tensor {
	unclipped := s.Own(ratio.MustMul(adv, false).MustNeg(true))
	clipped := s.Own(ratio.MustClamp(ts.FloatScalar(1-clip), ts.FloatScalar(1+clip), false).MustMul(adv, true).MustNeg(true))
	return s.Own(unclipped.MustMaximum(clipped, false).MustMean(gotch.Float, true))
}

// valueLoss is the critic's loss (CleanRL's v_loss) on values and returns in the value head's
// own units (returns / value_scale: in return units its gradient would swamp the policy's in
// the shared encoder, and under clipping):
//
//	L_V = ½ mean((V - R)²), or with clip_vloss
//	L_V = ½ mean(max((V - R)², (V_old + clip(V - V_old, -ε, ε) - R)²)).
func valueLoss(s *nn.Scope, value, ret, oldValue *ts.Tensor, clip float64, clipLoss bool) *ts.Tensor {
	sq := s.Own(value.MustSub(ret, false).MustSquare(true))
	if clipLoss {
		delta := s.Own(value.MustSub(oldValue, false).MustClamp(ts.FloatScalar(-clip), ts.FloatScalar(clip), true))
		clippedSq := s.Own(oldValue.MustAdd(delta, false).MustSub(ret, true).MustSquare(true))
		sq = s.Own(sq.MustMaximum(clippedSq, false))
	}
	return s.Own(sq.MustMean(gotch.Float, false).MustMulScalar(ts.FloatScalar(0.5), true))
}

// klToReference is the penalty that keeps the policy near the pretrained one (not in
// CleanRL), over each sample's feasible rows i, averaged over the mini-batch:
//
//	KL(π_ref ‖ π) = mean(Σ_i π_ref(i) (log π_ref(i) - log π(i))).
func klToReference(s *nn.Scope, refLogp, logp, mask *ts.Tensor) *ts.Tensor {
	diff := s.Own(refLogp.MustSub(logp, false))
	return s.Own(refLogp.MustExp(false).MustMul(diff, true).MustMul(mask, true).
		MustSumDimIntlist([]int64{1}, false, gotch.Float, true).MustMean(gotch.Float, true))
}

// ratioDiagnostics are what CleanRL logs of the ratio: approx_kl, the low-variance
// estimator mean((r - 1) - log r), and clip_frac, the share of samples with |r - 1| > ε.
func ratioDiagnostics(s *nn.Scope, ratio, logRatio *ts.Tensor, clip float64) (approxKL, clipFrac float64) {
	ts.NoGrad(func() {
		approxKL = scalar(s.Own(ratio.MustSubScalar(ts.FloatScalar(1), false).MustSub(logRatio, true).MustMean(gotch.Float, true)))
		clipFrac = scalar(s.Own(ratio.MustSubScalar(ts.FloatScalar(1), false).MustAbs(true).MustGt(ts.FloatScalar(clip), true).
			MustTotype(gotch.Float, true).MustMean(gotch.Float, true)))
	})
	return approxKL, clipFrac
}

// picked is a mini-batch as the loss reads it: each sample's action and rollout
// log-probability, its advantage (normalised per mini-batch with norm_adv), and its return and
// rollout value in the value head's units.
type picked struct {
	samples                     []*sample
	actions                     []int64
	oldLogp, adv, ret, oldValue []float32
}

func pick(r *rollout, idx []int, adv, ret []float32, valueScale float64, normAdv bool) picked {
	p := picked{samples: make([]*sample, len(idx)), actions: make([]int64, len(idx)), oldLogp: make([]float32, len(idx)),
		adv: make([]float32, len(idx)), ret: make([]float32, len(idx)), oldValue: make([]float32, len(idx))}
	for k, i := range idx {
		s := &r.samples[i]
		p.samples[k], p.actions[k], p.oldLogp[k], p.adv[k] = s, int64(s.action), s.logp, adv[i]
		p.ret[k], p.oldValue[k] = ret[i]/float32(valueScale), s.value/float32(valueScale)
	}
	if normAdv {
		normalise(p.adv)
	}
	return p
}

// rowsOf is the rows of ref at idx.
func rowsOf(ref [][]float32, idx []int) [][]float32 {
	rows := make([][]float32, len(idx))
	for k, i := range idx {
		rows[k] = ref[i]
	}
	return rows
}

// dist is the policy at a batch of observations: every row's masked, tempered
// log-probability (rollouts sample from it; the update's ratio, entropy and KL read it) and the
// critic's value in return units.
type dist struct {
	logits, logp *ts.Tensor // [B, width]
	value        *ts.Tensor // [B]
}

// evaluate is the one forward pass of rollouts, held-out evaluations and updates alike
// (CleanRL's get_action_and_value less the sampling, which the rollout does on the host with
// the run's PCG); every tensor belongs to s.
func (p policy) evaluate(s *nn.Scope, b *batch) dist {
	out := s.Forward(p.net, b.in)
	return dist{logits: out.Logits, logp: s.Own(b.logProbs(out.Logits, p.temperature)), value: out.Value}
}

// logProb is log π(a|s) of each sample's action (a row).
func (d dist) logProb(s *nn.Scope, actions []int64) *ts.Tensor {
	act := s.Longs(actions, int64(len(actions)), 1)
	return s.Own(d.logp.MustGather(1, act, false, false).MustView([]int64{int64(len(actions))}, true))
}

// entropy is the batch's mean entropy over feasible rows, H = -mean(Σ_i π(i) log π(i)).
func (d dist) entropy(s *nn.Scope, mask *ts.Tensor) *ts.Tensor {
	return s.Own(d.logp.MustExp(false).MustMul(d.logp, true).MustMul(mask, true).
		MustSumDimIntlist([]int64{1}, false, gotch.Float, true).MustMean(gotch.Float, true).MustNeg(true))
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
