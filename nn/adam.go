package nn

import (
	"fmt"
	"math"
	"slices"

	"github.com/sugarme/gotch/ts"
)

// AdamConfig holds Adam's constants; WeightDecay is decoupled (AdamW) when positive.
type AdamConfig struct {
	Beta1, Beta2, Eps, WeightDecay float64
}

// Adam is the Adam optimiser over a VarStore's trainable variables, written on tensors here
// rather than through libtorch's C++ optimiser so that its moments and step count can be
// saved and restored: a resumed run continues with exactly the state it stopped with.
type Adam struct {
	cfg    AdamConfig
	names  []string
	params []*ts.Tensor
	m, v   []*ts.Tensor
	step   int64
}

// NewAdam optimises params (e.g. Net.Params()).
func NewAdam(params []ts.NamedTensor, cfg AdamConfig) *Adam {
	a := &Adam{cfg: cfg}
	for _, p := range params {
		a.names = append(a.names, p.Name)
		a.params = append(a.params, p.Tensor)
		a.m = append(a.m, p.Tensor.MustZerosLike(false))
		a.v = append(a.v, p.Tensor.MustZerosLike(false))
	}
	return a
}

// Steps is the number of updates applied so far.
func (a *Adam) Steps() int64 { return a.step }

// ZeroGrad clears the gradients before a backward pass. (gotch's Tensor.ZeroGrad leaks the
// gradient's handle on every call.)
func (a *Adam) ZeroGrad() {
	for _, p := range a.params {
		g := p.MustGrad(false)
		if g.MustDefined() {
			g.MustDetach_()
			g.MustZero_()
		}
		g.MustDrop()
	}
}

// ClipGradNorm scales the gradients so their global L2 norm is at most maxNorm (when
// maxNorm > 0) and returns the norm before clipping.
func (a *Adam) ClipGradNorm(maxNorm float64) float64 {
	var norm float64
	pinned(func() { norm = a.clipGradNorm(maxNorm) })
	return norm
}

func (a *Adam) clipGradNorm(maxNorm float64) float64 {
	var sq float64
	for _, p := range a.params {
		g := p.MustGrad(false)
		if g.MustDefined() {
			n := g.MustNorm(false)
			x := n.Float64Values(true)[0]
			sq += x * x
		}
		g.MustDrop()
	}
	norm := math.Sqrt(sq)
	if maxNorm > 0 && norm > maxNorm {
		coef := ts.FloatScalar(maxNorm / (norm + 1e-6))
		for _, p := range a.params {
			g := p.MustGrad(false)
			if g.MustDefined() {
				g.MustMulScalar_(coef)
			}
			g.MustDrop()
		}
	}
	return norm
}

// Step applies one update with learning rate lr.
func (a *Adam) Step(lr float64) {
	a.step++
	b1, b2 := a.cfg.Beta1, a.cfg.Beta2
	c1 := 1 - math.Pow(b1, float64(a.step))
	c2 := 1 - math.Pow(b2, float64(a.step))
	NoGrad(func() {
		for i, p := range a.params {
			g := p.MustGrad(false)
			if !g.MustDefined() {
				g.MustDrop()
				continue
			}
			if a.cfg.WeightDecay > 0 {
				p.MustMulScalar_(ts.FloatScalar(1 - lr*a.cfg.WeightDecay))
			}
			m, v := a.m[i], a.v[i]
			m.MustMulScalar_(ts.FloatScalar(b1))
			gs := g.MustMulScalar(ts.FloatScalar(1-b1), false)
			m.MustAdd_(gs)
			gs.MustDrop()
			v.MustMulScalar_(ts.FloatScalar(b2))
			g2 := g.MustMul(g, false).MustMulScalar(ts.FloatScalar(1-b2), true)
			v.MustAdd_(g2)
			g2.MustDrop()
			g.MustDrop()
			// p -= lr/c1 * m / (sqrt(v/c2) + eps), PyTorch's formulation.
			denom := v.MustDivScalar(ts.FloatScalar(c2), false).MustSqrt(true).MustAddScalar(ts.FloatScalar(a.cfg.Eps), true)
			upd := m.MustDiv(denom, false).MustMulScalar(ts.FloatScalar(lr/c1), true)
			denom.MustDrop()
			p.MustSub_(upd)
			upd.MustDrop()
		}
	})
}

// State returns the moments and step count as named tensors, for ts.SaveMultiNew (gotch's SaveMulti corrupts the heap).
func (a *Adam) State() []ts.NamedTensor {
	out := []ts.NamedTensor{{Name: "step", Tensor: ts.MustOfSlice([]int64{a.step})}}
	for k, name := range a.names {
		out = append(out, ts.NamedTensor{Name: "m/" + name, Tensor: a.m[k]}, ts.NamedTensor{Name: "v/" + name, Tensor: a.v[k]})
	}
	return out
}

// Restore loads moments and step count saved from State of an optimiser over the same network.
func (a *Adam) Restore(state []ts.NamedTensor) error {
	byName := map[string]*ts.Tensor{}
	for _, nt := range state {
		byName[nt.Name] = nt.Tensor
	}
	st, ok := byName["step"]
	if !ok {
		return fmt.Errorf("optimiser state has no step count")
	}
	a.step = st.Int64Values(false)[0]
	for k, name := range a.names {
		for _, mv := range []struct {
			prefix string
			dst    *ts.Tensor
		}{{"m/", a.m[k]}, {"v/", a.v[k]}} {
			src, ok := byName[mv.prefix+name]
			if !ok {
				return fmt.Errorf("optimiser state has no %s%s", mv.prefix, name)
			}
			if !slices.Equal(src.MustSize(), mv.dst.MustSize()) {
				return fmt.Errorf("optimiser state %s%s has shape %v, parameter has %v", mv.prefix, name, src.MustSize(), mv.dst.MustSize())
			}
			NoGrad(func() { mv.dst.Copy_(src) })
		}
	}
	return nil
}
