package nn

import (
	"testing"

	"github.com/sugarme/gotch"
	gnn "github.com/sugarme/gotch/nn"
	"github.com/sugarme/gotch/ts"
)

// BenchmarkTinyOp measures the fixed cost of one libtorch call through gotch (cgo, dispatch,
// the wrapper), which dominates small networks.
func BenchmarkTinyOp(b *testing.B) {
	x := ts.MustOnes([]int64{4}, gotch.Float, gotch.CPU)
	for b.Loop() {
		x.MustAdd(x, false).MustDrop()
	}
}

// BenchmarkMLPStep is one training step of the smoke test's MLP on a batch of 64.
func BenchmarkMLPStep(b *testing.B) {
	Seed(1)
	vs := gnn.NewVarStore(gotch.CPU)
	model := mlp(vs)
	opt, err := gnn.DefaultAdamConfig().Build(vs, 0.01)
	if err != nil {
		b.Fatal(err)
	}
	x := ts.MustRandn([]int64{64, 2}, gotch.Float, gotch.CPU)
	y := ts.MustZeros([]int64{64}, gotch.Int64, gotch.CPU)
	for b.Loop() {
		loss := model.Forward(x).CrossEntropyForLogits(y)
		if err := opt.BackwardStep(loss); err != nil {
			b.Fatal(err)
		}
		loss.MustDrop()
	}
}
