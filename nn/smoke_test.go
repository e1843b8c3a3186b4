package nn

import (
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/schedrl/schedrl/internal/config"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/libtch"
	gnn "github.com/sugarme/gotch/nn"
	"github.com/sugarme/gotch/ts"
)

// quadrants draws n points in [-1,1]^2 away from the axes, labelled 1 when both coordinates
// share a sign: separable, but not by a line, so the hidden layer has to do work.
func quadrants(rng *rand.Rand, n int) (xs []float32, ys []int64) {
	for len(ys) < n {
		x, y := rng.Float32()*2-1, rng.Float32()*2-1
		if min(abs(x), abs(y)) < 0.1 {
			continue
		}
		xs = append(xs, x, y)
		label := int64(0)
		if x*y > 0 {
			label = 1
		}
		ys = append(ys, label)
	}
	return xs, ys
}

func abs(x float32) float32 { return max(x, -x) }

func mlp(vs *gnn.VarStore) *gnn.Sequential {
	p := vs.Root()
	relu := gnn.NewFunc(func(x *ts.Tensor) *ts.Tensor { return x.MustRelu(false) })
	seq := gnn.Seq()
	seq.Add(gnn.NewLinear(p.Sub("l1"), 2, 32, gnn.DefaultLinearConfig()))
	seq.AddFn(relu)
	seq.Add(gnn.NewLinear(p.Sub("l2"), 32, 32, gnn.DefaultLinearConfig()))
	seq.AddFn(relu)
	seq.Add(gnn.NewLinear(p.Sub("l3"), 32, 2, gnn.DefaultLinearConfig()))
	return seq
}

func tensors(xs []float32, ys []int64) (*ts.Tensor, *ts.Tensor) {
	return ts.MustOfSlice(xs).MustView([]int64{int64(len(ys)), 2}, true), ts.MustOfSlice(ys)
}

func logits(m *gnn.Sequential, x *ts.Tensor) []float64 {
	var out []float64
	NoGrad(func() { out = m.Forward(x).Float64Values(true) })
	return out
}

// TestMLPLearnsAndReloads is the gotch smoke test: libtorch trains a small network on CPU, and a
// saved VarStore reloads into a fresh one with bit-identical outputs.
func TestMLPLearnsAndReloads(t *testing.T) {
	dev, err := Device(config.DeviceConfig{Name: "cpu", Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 11))
	trainX, trainY := tensors(quadrants(rng, 2000))
	testX, testY := tensors(quadrants(rng, 1000))

	Seed(1)
	vs := gnn.NewVarStore(dev)
	model := mlp(vs)
	opt, err := gnn.DefaultAdamConfig().Build(vs, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for range 300 {
		WithGrad(func() {
			loss := model.Forward(trainX).CrossEntropyForLogits(trainY)
			err = opt.BackwardStep(loss)
			loss.MustDrop()
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	var acc float64
	NoGrad(func() { acc = model.Forward(testX).AccuracyForLogits(testY).Float64Values(true)[0] })
	t.Logf("test accuracy %.3f after 300 full-batch Adam steps in %v", acc, time.Since(start))
	if acc <= 0.95 {
		t.Fatalf("test accuracy %.3f, want > 0.95", acc)
	}

	path := filepath.Join(t.TempDir(), "model.ot")
	if err := vs.Save(path); err != nil {
		t.Fatal(err)
	}
	Seed(2) // a different initialisation, so only Load can make the outputs match
	vs2 := gnn.NewVarStore(dev)
	model2 := mlp(vs2)
	want := logits(model, testX)
	if slices.Equal(logits(model2, testX), want) {
		t.Fatal("fresh network already matches the trained one; the reload check would prove nothing")
	}
	var err2 error
	pinned(func() { err2 = vs2.Load(path) })
	if err := err2; err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(logits(model2, testX), want) {
		t.Fatal("reloaded VarStore gives different outputs")
	}
}

// Same seed, same initial weights: the determinism the pipeline relies on.
func TestSeedReproducesInit(t *testing.T) {
	init := func(seed int64) []float64 {
		Seed(seed)
		vs := gnn.NewVarStore(gotch.CPU)
		x := ts.MustOfSlice([]float32{0.5, -0.25}).MustView([]int64{1, 2}, true)
		return logits(mlp(vs), x)
	}
	a, b, c := init(5), init(5), init(6)
	if !slices.Equal(a, b) {
		t.Errorf("seed 5 twice: %v vs %v", a, b)
	}
	if slices.Equal(a, c) {
		t.Errorf("seeds 5 and 6 gave the same network: %v", a)
	}
}

func TestDeviceRejects(t *testing.T) {
	for _, name := range []string{"tpu", "cuda:-1"} {
		if _, err := Device(config.DeviceConfig{Name: name}); err == nil {
			t.Errorf("Device(%q) succeeded", name)
		}
	}
	if !gotch.CUDA.IsAvailable() {
		if _, err := Device(config.DeviceConfig{Name: "cuda"}); err == nil {
			t.Error(`Device("cuda") succeeded without CUDA`)
		}
	}
}

func TestProbe(t *testing.T) {
	r, err := Probe()
	if err != nil {
		t.Fatal(err)
	}
	if len(r.LibtorchVersion) < 3 || r.LibtorchVersion[:3] != "2.1" {
		t.Errorf("libtorch version %q, want 2.1.x", r.LibtorchVersion)
	}
	if r.LibtorchPath == "" || r.Variant == "" {
		t.Errorf("incomplete probe: %+v", r)
	}
}

// A thread count set by Device holds on every OS thread libtorch runs on, also on one that ran
// libtorch before the count was set (libtorch keeps the count per thread, and Go moves
// goroutines between threads): otherwise one run sums its floats in orders that depend on
// scheduling, and a resumed run parts from the uninterrupted one under load.
func TestDeviceThreadsHoldOnEveryThread(t *testing.T) {
	jobs := make(chan func())
	defer close(jobs)
	go func() {
		runtime.LockOSThread() // this goroutine's thread is kept, with its libtorch settings
		for job := range jobs {
			job()
		}
	}()
	onOld := func(f func()) {
		done := make(chan struct{})
		jobs <- func() { f(); close(done) }
		<-done
	}
	onOld(func() {
		if _, err := Device(config.DeviceConfig{Name: "cpu", Threads: 2}); err != nil {
			t.Error(err)
		}
		libtch.AtGetNumThreads() // libtorch initialises this thread's count, as any parallel op does
	})
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if _, err := Device(config.DeviceConfig{Name: "cpu", Threads: 1}); err != nil {
			t.Error(err)
		}
		close(done)
	}()
	<-done
	var got int
	onOld(func() { NoGrad(func() { got = libtch.AtGetNumThreads() }) })
	if got != 1 {
		t.Errorf("a section on a thread set earlier runs with %d intra-op threads, want the 1 set last", got)
	}
}
