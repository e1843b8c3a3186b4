package nn

import (
	"math/rand/v2"
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// A loss built in a scope, backward included, leaves no tensor behind once the scope is
// dropped, and chains that drop their intermediates (del true) still pass gradients to every
// parameter.
func TestScopeFreesWhatItOwns(t *testing.T) {
	net := testNet(t, 5)
	b := NewHostBatch(net.Arch, 2, 20)
	rng := rand.New(rand.NewPCG(1, 2))
	for j := range 2 {
		if err := b.Put(j, randomObs(net.Arch, 20, rng)); err != nil {
			t.Fatal(err)
		}
	}
	in := b.Tensors(gotch.CPU)
	defer in.Drop()
	before := len(ts.ExistingTensors)
	WithGrad(func() {
		s := NewScope(gotch.CPU)
		defer s.Drop()
		out := s.Forward(net, in)
		target := s.Floats([]float32{1, -1})
		loss := s.Own(out.Value.MustSub(target, false).MustSquare(true).MustMean(gotch.Float, true))
		loss = s.Own(loss.MustAdd(s.Own(out.Logits.MustClampMin(ts.FloatScalar(-10), false).MustMean(gotch.Float, true)), false))
		loss.MustBackward()
	})
	if after := len(ts.ExistingTensors); after != before {
		t.Errorf("%d tensors before the scope, %d after it was dropped", before, after)
	}
	for _, p := range net.Params() {
		g := p.Tensor.MustGrad(false)
		defined := g.MustDefined()
		g.MustDrop()
		if !defined {
			t.Errorf("parameter %s has no gradient", p.Name)
		}
	}
}
