package nn

import (
	"bytes"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sugarme/gotch"
	gnn "github.com/sugarme/gotch/nn"
	"github.com/sugarme/gotch/ts"

	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/internal/checkpoint"
	"github.com/schedrl/schedrl/internal/config"
)

func testArch(t *testing.T) Arch {
	t.Helper()
	spec, err := env.SpecOf(env.PlacementName)
	if err != nil {
		t.Fatal(err)
	}
	var nc config.NetworkConfig
	nc.SetDefaults()
	nc.Hidden, nc.HeadHidden = 16, 16
	return NewArch(spec, nc, 10)
}

func testNet(t *testing.T, seed int64) *Net {
	t.Helper()
	Seed(seed)
	net, err := NewNet(testArch(t), gotch.CPU)
	if err != nil {
		t.Fatal(err)
	}
	return net
}

// randomObs is an observation of n nodes with random features and a random mask (node 0
// always feasible).
func randomObs(a Arch, n int, rng *rand.Rand) *env.Observation {
	obs := &env.Observation{NumNodes: n, Nodes: make([]float32, n*a.NodeDim), Mask: make([]bool, n),
		Task: make([]float32, a.TaskDim), Global: make([]float32, a.GlobalDim)}
	for i := range obs.Nodes {
		obs.Nodes[i] = rng.Float32()
	}
	for i := range obs.Mask {
		obs.Mask[i] = i == 0 || rng.IntN(2) == 0
	}
	for i := range obs.Task {
		obs.Task[i] = rng.Float32()
	}
	for i := range obs.Global {
		obs.Global[i] = rng.Float32()
	}
	return obs
}

// forward runs net on observations padded to maxNodes and returns logits per row and values.
func forward(t *testing.T, net *Net, maxNodes int, obs ...*env.Observation) ([][]float32, []float32) {
	t.Helper()
	b := NewHostBatch(net.Arch, len(obs), maxNodes)
	for j, o := range obs {
		if err := b.Put(j, o); err != nil {
			t.Fatal(err)
		}
	}
	var logits, values []float32
	var width int
	NoGrad(func() {
		in := b.Tensors(gotch.CPU)
		width = int(in.Mask.MustSize()[1])
		out := net.Forward(in)
		in.Drop()
		logits, values = HostFloats(out.Logits, nil), HostFloats(out.Value, nil)
		out.Drop()
	})
	rows := make([][]float32, len(obs))
	for j := range obs {
		rows[j] = logits[j*width : j*width+obs[j].NumNodes]
	}
	return rows, values
}

func TestForwardMasksAndIgnoresPadding(t *testing.T) {
	net := testNet(t, 1)
	rng := rand.New(rand.NewPCG(1, 2))
	small, big := randomObs(net.Arch, 7, rng), randomObs(net.Arch, 40, rng)

	alone, vAlone := forward(t, net, 7, small)
	batched, vBatched := forward(t, net, 64, small, big)
	for i, ok := range small.Mask {
		if !ok && alone[0][i] != MaskedLogit {
			t.Errorf("infeasible node %d has logit %v, want %v", i, alone[0][i], MaskedLogit)
		}
		if ok && alone[0][i] <= MaskedLogit/2 {
			t.Errorf("feasible node %d has logit %v", i, alone[0][i])
		}
		// Padding and a larger neighbour in the batch must not change a cluster's scores.
		if d := math.Abs(float64(alone[0][i] - batched[0][i])); d > 1e-5 {
			t.Errorf("node %d: logit %v alone, %v in a padded batch", i, alone[0][i], batched[0][i])
		}
	}
	if d := math.Abs(float64(vAlone[0] - vBatched[0])); d > 1e-4 {
		t.Errorf("value %v alone, %v in a padded batch", vAlone[0], vBatched[0])
	}
	// Nodes are scored by shared weights: permuting the nodes permutes the logits.
	perm := rng.Perm(small.NumNodes)
	shuffled := &env.Observation{NumNodes: small.NumNodes, Task: small.Task, Global: small.Global}
	for _, i := range perm {
		shuffled.Nodes = append(shuffled.Nodes, small.Nodes[i*net.Arch.NodeDim:(i+1)*net.Arch.NodeDim]...)
		shuffled.Mask = append(shuffled.Mask, small.Mask[i])
	}
	got, _ := forward(t, net, 7, shuffled)
	for k, i := range perm {
		if d := math.Abs(float64(got[0][k] - alone[0][i])); d > 1e-5 {
			t.Errorf("permuted node %d: logit %v, want %v", i, got[0][k], alone[0][i])
		}
	}
}

func TestCheckpointRoundTripAndRefusals(t *testing.T) {
	net := testNet(t, 3)
	dir := filepath.Join(t.TempDir(), "ckpt")
	if _, err := SaveCheckpoint(dir, net, Lineage{ConfigHash: "abc", Metrics: map[string]float64{"val_agreement": 0.5}}); err != nil {
		t.Fatal(err)
	}
	obs := randomObs(net.Arch, 30, rand.New(rand.NewPCG(5, 6)))
	want, wantV := forward(t, net, 30, obs)

	loaded, m, err := LoadCheckpoint(dir, gotch.CPU)
	if err != nil {
		t.Fatal(err)
	}
	if loaded.Arch != net.Arch || m.Metrics["val_agreement"] != 0.5 || m.FeatureVersion != 1 {
		t.Fatalf("loaded arch %+v, manifest %+v", loaded.Arch, m)
	}
	got, gotV := forward(t, loaded, 30, obs)
	if !slices.Equal(got[0], want[0]) || gotV[0] != wantV[0] {
		t.Fatal("reloaded checkpoint scores differently")
	}

	// A manifest that claims another feature spec is refused by name.
	m.Hyper["arch"] = func() Arch { a := net.Arch; a.FeatureSpec = "placement-v0"; return a }()
	data, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, checkpoint.ManifestFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadCheckpoint(dir, gotch.CPU); err == nil || !strings.Contains(err.Error(), "placement-v0") || !strings.Contains(err.Error(), env.PlacementSpec) {
		t.Errorf("feature-spec mismatch: got %v", err)
	}

	// Changed weights fail the manifest's checksum.
	if _, err := SaveCheckpoint(dir, net, Lineage{}); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, checkpoint.ModelFile), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte{0})
	f.Close()
	if _, _, err := LoadCheckpoint(dir, gotch.CPU); err == nil || !strings.Contains(err.Error(), "sha256") && !strings.Contains(err.Error(), "size") {
		t.Errorf("tampered model.ot: got %v", err)
	}
}

// The same weights give the same file: six networks of one seed write identical bytes
// (gotch's VarStore.Save wrote its map in a new order each time).
func TestSaveWeightsDependsOnlyOnTheWeights(t *testing.T) {
	var first []byte
	for i := range 6 {
		// libtorch names the archive's folder after the file: one name, as in checkpoints.
		path := filepath.Join(t.TempDir(), "w.ot")
		if err := SaveWeights(testNet(t, 3), path); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = data
		} else if !bytes.Equal(data, first) {
			t.Fatalf("save %d of the same weights differs from the first (%d vs %d bytes)", i, len(data), len(first))
		}
	}
	loaded := testNet(t, 4)
	path := filepath.Join(t.TempDir(), "w.ot")
	if err := SaveWeights(testNet(t, 3), path); err != nil {
		t.Fatal(err)
	}
	if err := loaded.VS.Load(path); err != nil {
		t.Fatal(err)
	}
	if !maps.EqualFunc(weights(loaded), weights(testNet(t, 3)), slices.Equal) {
		t.Fatal("weights read back differ from the saved ones")
	}
	// LoadWeights reads them as VarStore.Load does, and refuses another network's file.
	loaded = testNet(t, 4)
	if err := LoadWeights(loaded, path); err != nil {
		t.Fatal(err)
	}
	if !maps.EqualFunc(weights(loaded), weights(testNet(t, 3)), slices.Equal) {
		t.Fatal("LoadWeights read back other weights than the saved ones")
	}
	arch := testArch(t)
	arch.Hidden *= 2
	wider, err := NewNet(arch, gotch.CPU)
	if err != nil {
		t.Fatal(err)
	}
	if err := LoadWeights(wider, path); err == nil {
		t.Error("LoadWeights filled a wider network from a narrower one's file")
	}
}

// quadLoss is a loss with gradients on every parameter of the network.
func quadLoss(net *Net, in *Input) *ts.Tensor {
	out := net.Forward(in)
	feasible := out.Logits.MustClampMin(ts.FloatScalar(-10), true)
	v := out.Value.MustMean(gotch.Float, true)
	return feasible.MustMean(gotch.Float, true).MustAdd(v.MustMul(v, false), true)
}

func trainSteps(t *testing.T, net *Net, opt *Adam, in *Input, steps int) {
	t.Helper()
	for range steps {
		opt.ZeroGrad()
		WithGrad(func() {
			loss := quadLoss(net, in)
			loss.MustBackward()
			loss.MustDrop()
		})
		opt.ClipGradNorm(0.5)
		opt.Step(0.01)
	}
}

func weights(net *Net) map[string][]float64 {
	out := map[string][]float64{}
	for _, p := range net.Params() {
		out[p.Name] = p.Tensor.MustView([]int64{-1}, false).Float64Values(true)
	}
	return out
}

// Adam's saved state continues a run exactly: 3+3 steps with a save/restore in between give
// the same weights as 6 steps, and libtorch's own Adam agrees with ours.
func TestAdamResumesExactlyAndMatchesLibtorch(t *testing.T) {
	obs := randomObs(testArch(t), 25, rand.New(rand.NewPCG(8, 9)))
	b := NewHostBatch(testArch(t), 1, 25)
	if err := b.Put(0, obs); err != nil {
		t.Fatal(err)
	}
	in := b.Tensors(gotch.CPU)
	defer in.Drop()
	cfg := AdamConfig{Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}

	straight := testNet(t, 4)
	trainSteps(t, straight, NewAdam(straight.Params(), cfg), in, 6)

	first := testNet(t, 4)
	opt := NewAdam(first.Params(), cfg)
	trainSteps(t, first, opt, in, 3)
	dir := t.TempDir()
	if _, err := SaveCheckpoint(dir, first, Lineage{}); err != nil {
		t.Fatal(err)
	}
	if err := ts.SaveMultiNew(opt.State(), filepath.Join(dir, "optim.ot")); err != nil {
		t.Fatal(err)
	}
	resumed, _, err := LoadCheckpoint(dir, gotch.CPU)
	if err != nil {
		t.Fatal(err)
	}
	opt2 := NewAdam(resumed.Params(), cfg)
	state, err := ts.LoadMultiWithDevice(filepath.Join(dir, "optim.ot"), gotch.CPU)
	if err != nil {
		t.Fatal(err)
	}
	if err := opt2.Restore(state); err != nil {
		t.Fatal(err)
	}
	if opt2.Steps() != 3 {
		t.Fatalf("restored step count %d, want 3", opt2.Steps())
	}
	trainSteps(t, resumed, opt2, in, 3)
	want, got := weights(straight), weights(resumed)
	for name := range want {
		if !slices.Equal(want[name], got[name]) {
			t.Errorf("%s differs after resume", name)
		}
	}

	// libtorch's Adam (no clipping needed to compare: clip at a norm never reached).
	ours, theirs := testNet(t, 5), testNet(t, 5)
	oa := NewAdam(ours.Params(), cfg)
	ta, err := gnn.NewAdamConfig(0.9, 0.999, 0).Build(theirs.VS, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	for range 4 {
		oa.ZeroGrad()
		var err error
		WithGrad(func() {
			l := quadLoss(ours, in)
			l.MustBackward()
			l.MustDrop()
			l2 := quadLoss(theirs, in)
			err = ta.BackwardStep(l2)
			l2.MustDrop()
		})
		if err != nil {
			t.Fatal(err)
		}
		oa.Step(0.01)
	}
	wo, wt := weights(ours), weights(theirs)
	for name := range wo {
		for i := range wo[name] {
			if d := math.Abs(wo[name][i] - wt[name][i]); d > 1e-5 {
				t.Fatalf("%s[%d]: ours %v, libtorch %v", name, i, wo[name][i], wt[name][i])
			}
		}
	}
}

// An observation with no feasible candidate (the score head's padding only) gets MaskedLogit
// everywhere, and does not disturb its neighbour's scores.
func TestForwardWithoutFeasibleCandidates(t *testing.T) {
	net := testNet(t, 6)
	rng := rand.New(rand.NewPCG(5, 6))
	none, some := randomObs(net.Arch, 9, rng), randomObs(net.Arch, 12, rng)
	clear(none.Mask)
	batched, values := forward(t, net, 12, none, some)
	alone, _ := forward(t, net, 12, some)
	for i, l := range batched[0] {
		if l != MaskedLogit {
			t.Errorf("node %d of an observation with no feasible node: logit %v", i, l)
		}
	}
	if math.IsNaN(float64(values[0])) || math.IsInf(float64(values[0]), 0) {
		t.Errorf("value %v", values[0])
	}
	for i := range some.NumNodes {
		if d := math.Abs(float64(batched[1][i] - alone[0][i])); d > 1e-5 {
			t.Errorf("node %d: logit %v next to an all-infeasible observation, %v alone", i, batched[1][i], alone[0][i])
		}
	}
}

// The max pool is computed two ways, by whether gradients are tracked; both are exact, so a
// forward pass gives the same output with and without them.
func TestForwardSameWithAndWithoutGrad(t *testing.T) {
	net := testNet(t, 7)
	rng := rand.New(rand.NewPCG(7, 8))
	b := NewHostBatch(net.Arch, 3, 40)
	for j, n := range []int{40, 17, 29} {
		if err := b.Put(j, randomObs(net.Arch, n, rng)); err != nil {
			t.Fatal(err)
		}
	}
	in := b.Tensors(gotch.CPU)
	defer in.Drop()
	run := func(mode func(func())) (logits, values []float32) {
		mode(func() {
			out := net.Forward(in)
			logits, values = HostFloats(out.Logits, nil), HostFloats(out.Value, nil)
			out.Drop()
		})
		return logits, values
	}
	la, va := run(NoGrad)
	lb, vb := run(WithGrad)
	if !slices.Equal(la, lb) || !slices.Equal(va, vb) {
		t.Errorf("outputs differ with and without gradients: values %v and %v", va, vb)
	}
}
