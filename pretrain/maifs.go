package pretrain

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/internal/checkpoint"
	"github.com/schedrl/schedrl/nn"
)

// MAIFSOptions are a behaviour-cloning run of the multi-agent network on an expert's decision
// points (env.MAIFSRecorder samples).
type MAIFSOptions struct {
	Arch       nn.MAIFSArch
	Train, Val []env.MAIFSSample
	Epochs     int
	Batch      int
	LR         float64
	// OrderWeight weighs the order loss (Plackett-Luce over the expert's order) against the
	// candidates' cross-entropy.
	OrderWeight float64
	// LabelSmoothing moves this share of each agent's target from the expert's candidate to a
	// uniform spread over the candidates open at its turn, so that the clone keeps every open
	// candidate within a fine-tune's sampling reach (0: the expert's candidate alone).
	LabelSmoothing float64
	Seed           int64
	Dev            gotch.Device
	Out            string // checkpoint directory ("" = none)
	Lineage        nn.Lineage
	Progress       func(epoch int, loss, valAgree float64)
}

// MAIFSResult is what the run measured.
type MAIFSResult struct {
	Net      *nn.MAIFSNet
	Manifest checkpoint.Manifest
	Loss     float64 // last epoch's mean training loss
	// Agreement is the tie-aware share of validation agents whose best candidate agrees with the
	// expert's (env.Agrees); Exact counts the same candidate only.
	Agreement, Exact float64
	Seconds          float64
}

// RunMAIFS clones the expert: per agent, cross-entropy of its candidates' logits against the
// expert's candidate; per decision point, the Plackett-Luce likelihood of the expert's order
// under the order head. Batches are drawn in a seeded order; Adam as the placement pretrain.
func RunMAIFS(ctx context.Context, o MAIFSOptions) (*MAIFSResult, error) {
	switch {
	case len(o.Train) == 0:
		return nil, fmt.Errorf("maifs pretrain: no training samples")
	case o.Epochs < 1 || o.Batch < 1 || !(o.LR > 0):
		return nil, fmt.Errorf("maifs pretrain: epochs %d, batch %d, lr %g: want each > 0", o.Epochs, o.Batch, o.LR)
	}
	start := time.Now()
	nn.Seed(o.Seed)
	net, err := nn.NewMAIFSNet(o.Arch, o.Dev)
	if err != nil {
		return nil, err
	}
	opt := nn.NewAdam(net.Params(), nn.AdamConfig{Beta1: 0.9, Beta2: 0.999, Eps: 1e-8})
	rng := rand.New(rand.NewPCG(uint64(o.Seed), 0x6d61_6966_735f_6263)) // stream "maifs_bc"
	res := &MAIFSResult{Net: net}
	var history []checkpoint.Step
	for epoch := range o.Epochs {
		perm := rng.Perm(len(o.Train))
		total, batches := 0.0, 0
		for at := 0; at < len(perm); at += o.Batch {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			batch := make([]env.MAIFSSample, 0, o.Batch)
			for _, i := range perm[at:min(at+o.Batch, len(perm))] {
				batch = append(batch, o.Train[i])
			}
			loss, err := maifsStep(net, opt, batch, o)
			if err != nil {
				return nil, err
			}
			total += loss
			batches++
		}
		res.Loss = total / float64(batches)
		history = append(history, checkpoint.Step{Step: int64(epoch + 1), Value: res.Loss})
		if res.Agreement, res.Exact, err = MAIFSAgreement(net, o.Dev, o.Val); err != nil {
			return nil, err
		}
		if o.Progress != nil {
			o.Progress(epoch+1, res.Loss, res.Agreement)
		}
	}
	res.Seconds = time.Since(start).Seconds()
	if o.Out != "" {
		lin := o.Lineage
		lin.Metrics = map[string]float64{"train_loss": res.Loss, "val_agreement": res.Agreement, "val_exact": res.Exact, "train_samples": float64(len(o.Train)), "val_samples": float64(len(o.Val))}
		lin.History = map[string][]checkpoint.Step{"train_loss": history}
		if lin.Hyper == nil {
			lin.Hyper = map[string]any{}
		}
		lin.Hyper["epochs"], lin.Hyper["batch"], lin.Hyper["lr"], lin.Hyper["order_weight"], lin.Hyper["seed"] = o.Epochs, o.Batch, o.LR, o.OrderWeight, o.Seed
		lin.Hyper["label_smoothing"] = o.LabelSmoothing
		if res.Manifest, err = nn.SaveMAIFS(o.Out, net, lin); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// maifsLabels are a batch's expert actions [B, N] (0 at padding), the real agents [B, N] and
// the agents in the expert's order [B, N] (padding last, pointing at padding agents).
func maifsLabels(batch []env.MAIFSSample, h *nn.MAIFSHost) (actions, order []int64, real []float32) {
	actions, order, real = make([]int64, h.B*h.N), make([]int64, h.B*h.N), make([]float32, h.B*h.N)
	for b, s := range batch {
		n := s.Obs.NumAgents()
		for i := range h.N {
			order[b*h.N+i] = int64(i) // padding ranks point at themselves
		}
		for i := range n {
			actions[b*h.N+i] = int64(s.Actions[i])
			order[b*h.N+s.Rank[i]] = int64(i)
			real[b*h.N+i] = 1
		}
	}
	return actions, order, real
}

// MAIFSLoss is the behaviour-cloning loss of out against batch: the mean over real agents of
// the candidates' cross-entropy (against the expert's candidate, or with smoothing > 0 a
// target of 1 - smoothing there and smoothing spread evenly over the candidates open at the
// agent's turn), plus orderWeight times the mean over real ranks of the Plackett-Luce negative
// log-likelihood of the expert's order. Tensors are s's.
func MAIFSLoss(s *nn.Scope, dev gotch.Device, out nn.MAIFSOutput, batch []env.MAIFSSample, h *nn.MAIFSHost, orderWeight, smoothing float64) *ts.Tensor {
	actions, order, real := maifsLabels(batch, h)
	b, n := int64(h.B), int64(h.N)
	act := s.Longs(actions, b, n, 1)
	rk := s.Longs(order, b, n)
	mask := s.Own(nn.HostTensor(real, []int64{b, n}, dev))
	count := s.Own(mask.MustSum(gotch.Float, false))
	logp := s.Own(out.Logits.MustLogSoftmax(-1, gotch.Float, false))
	picked := s.Own(s.Own(logp.MustGather(2, act, false, false)).MustView([]int64{b, n}, false))
	ce := s.Own(s.Own(s.Own(picked.MustMul(mask, false)).MustSum(gotch.Float, false)).MustNeg(false))
	ce = s.Own(ce.MustDiv(count, false))
	if smoothing > 0 {
		// Closed candidates have the finite nn.MaskedLogit, so their zero weight zeroes them.
		spread := s.Own(nn.HostTensor(openSpread(batch, h), []int64{b, n, int64(h.K)}, dev))
		u := s.Own(s.Own(s.Own(logp.MustMul(spread, false)).MustSum(gotch.Float, false)).MustNeg(false))
		u = s.Own(u.MustDiv(count, false))
		ce = s.Own(s.Own(ce.MustMulScalar(ts.FloatScalar(1-smoothing), false)).MustAdd(s.Own(u.MustMulScalar(ts.FloatScalar(smoothing), false)), false))
	}
	// Plackett-Luce: at rank r, -score_r + logsumexp(scores of ranks r..end). The real ranks
	// are the first ones, so the mask of real agents masks real ranks too.
	sorted := s.Own(out.Order.MustGather(1, rk, false, false))
	tail := s.Own(s.Own(s.Own(sorted.MustFlip([]int64{1}, false)).MustLogcumsumexp(1, false)).MustFlip([]int64{1}, false))
	pl := s.Own(s.Own(s.Own(tail.MustSub(sorted, false)).MustMul(mask, false)).MustSum(gotch.Float, false))
	pl = s.Own(s.Own(pl.MustDiv(count, false)).MustMulScalar(ts.FloatScalar(orderWeight), false))
	return s.Own(ce.MustAdd(pl, false))
}

// openSpread is, per real agent [B, N, K], 1 over its count of candidates open at its turn
// (feasible and in its turn mask) on each of them, 0 elsewhere.
func openSpread(batch []env.MAIFSSample, h *nn.MAIFSHost) []float32 {
	w := make([]float32, h.B*h.N*h.K)
	for b, smp := range batch {
		for i, cands := range smp.Obs.Cand {
			var open []int
			for k, c := range cands {
				if c.Feasible && (smp.Turn == nil || smp.Turn[i][k]) {
					open = append(open, k)
				}
			}
			for _, k := range open {
				w[(b*h.N+i)*h.K+k] = 1 / float32(len(open))
			}
		}
	}
	return w
}

func maifsStep(net *nn.MAIFSNet, opt *nn.Adam, batch []env.MAIFSSample, o MAIFSOptions) (float64, error) {
	obs := make([]*env.MAIFSObs, len(batch))
	for i, s := range batch {
		obs[i] = s.Obs
	}
	h, err := nn.NewMAIFSHost(net.Arch, obs)
	if err != nil {
		return 0, err
	}
	for b, s := range batch {
		h.MaskTurns(b, s.Turn)
	}
	var loss float64
	nn.WithGrad(func() {
		s := nn.NewScope(o.Dev)
		defer s.Drop()
		opt.ZeroGrad()
		out := net.Forward(s, h.Tensors(s, o.Dev))
		l := MAIFSLoss(s, o.Dev, out, batch, h, o.OrderWeight, o.LabelSmoothing)
		l.MustBackward()
		loss = l.Float64Values(false)[0]
	})
	opt.ClipGradNorm(1)
	opt.Step(o.LR)
	return loss, nil
}

// MAIFSAgreement is the tie-aware (env.Agrees) and exact agreement of the network's best
// candidate per agent, among those still open at its turn in the expert's order (Turn), with
// the expert's, over samples.
func MAIFSAgreement(net *nn.MAIFSNet, dev gotch.Device, samples []env.MAIFSSample) (agree, exact float64, err error) {
	sc := nn.MAIFSScorer{Net: net, Dev: dev}
	n, a, x := 0, 0, 0
	for _, s := range samples {
		scores, err := sc.ScoreMAIFS(s.Obs)
		if err != nil {
			return 0, 0, err
		}
		for i, want := range s.Actions {
			base, best := s.Obs.CandStart[i], -1
			for k, c := range s.Obs.Cand[i] {
				if c.Feasible && s.Turn[i][k] && (best < 0 || scores.Logits[base+k] > scores.Logits[base+best]) {
					best = k
				}
			}
			n++
			if env.Agrees(s.Obs, i, best, want) {
				a++
			}
			if best == want {
				x++
			}
		}
	}
	if n == 0 {
		return 0, 0, nil
	}
	return float64(a) / float64(n), float64(x) / float64(n), nil
}
