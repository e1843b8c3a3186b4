package pretrain

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sugarme/gotch"

	"github.com/schedrl/schedrl/datasets"
	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/internal/repotest"
	"github.com/schedrl/schedrl/nn"
	"github.com/schedrl/schedrl/policy"
	"github.com/schedrl/schedrl/sim"
)

func traceFile(name string) string {
	return filepath.Join(repotest.OpenbDir(), name)
}

// smallCluster writes the first n nodes of the openb node list to dir.
func smallCluster(t *testing.T, dir string, n int) string {
	t.Helper()
	data, err := os.ReadFile(traceFile("openb_node_list_gpu_node.csv"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	path := filepath.Join(dir, "nodes.csv")
	if err := os.WriteFile(path, []byte(strings.Join(lines[:n+1], "")), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// fgdDataset logs FGD on a small cluster for the given seeds and builds a dataset of them,
// the last episode (by the seeded split) held out for validation.
func fgdDataset(t *testing.T, nodes int, seeds ...uint64) string {
	t.Helper()
	dir := t.TempDir()
	nodesCSV := smallCluster(t, dir, nodes)
	for _, seed := range seeds {
		p, err := sim.Prepare(sim.Experiment{NodesPath: nodesCSV, PodsPath: traceFile("openb_pod_list_default.csv"), Tune: 1.3, Seed: seed, Coverage: 0.95})
		if err != nil {
			t.Fatal(err)
		}
		fgd, _ := policy.NewPlacer("fgd")
		if _, err := p.RunLogged(context.Background(), fgd, filepath.Join(dir, fmt.Sprintf("fgd_seed%d.jsonl", seed))); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, "ds")
	_, _, err := datasets.Build(datasets.BuildOptions{Logs: filepath.Join(dir, "*.jsonl"), Env: env.PlacementName, Out: out,
		ValFraction: 1 / float64(len(seeds)), Seed: 1, ShardRows: 1000, RowGroupRows: 256, Workers: 1,
		EnvOptions: env.DefaultOptions(), Gamma: 0.99})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func smallOptions(dataset, out string) Options {
	var pc config.PretrainConfig
	pc.SetDefaults()
	pc.Dataset, pc.Out = dataset, out
	pc.Epochs, pc.BatchSize, pc.StepsPerEpoch = 3, 16, 5
	pc.WarmupSteps, pc.CheckpointEvery, pc.Patience = 2, 3, 0
	var nc config.NetworkConfig
	nc.SetDefaults()
	nc.Hidden, nc.HeadHidden = 16, 16
	return Options{Pretrain: pc, Network: nc, Device: config.DeviceConfig{Name: "cpu", Threads: 1}, Seed: 7}
}

func finalWeights(t *testing.T, dir string) map[string][]float64 {
	t.Helper()
	net, _, err := nn.LoadCheckpoint(dir, gotch.CPU)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]float64{}
	for _, p := range net.Params() {
		out[p.Name] = p.Tensor.MustView([]int64{-1}, false).Float64Values(true)
	}
	return out
}

func sameWeights(a, b map[string][]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !slices.Equal(a[k], b[k]) {
			return false
		}
	}
	return true
}

// A run that crashes mid-epoch (no save at the crash; the last periodic state is older) and is
// run again ends with the same weights, bit for bit, as an uninterrupted run; another seed
// does not, so the comparison can fail.
func TestResumeAfterCrashGivesSameWeights(t *testing.T) {
	ds := fgdDataset(t, 30, 1, 2, 3)
	root := t.TempDir()

	straight := smallOptions(ds, filepath.Join(root, "straight"))
	want, err := Run(context.Background(), straight)
	if err != nil {
		t.Fatal(err)
	}
	if want.Steps != 15 || want.Epochs != 3 {
		t.Fatalf("uninterrupted run: %d steps, %d epochs; want 15, 3", want.Steps, want.Epochs)
	}

	crash := smallOptions(ds, filepath.Join(root, "crashed"))
	errCrash := errors.New("simulated crash")
	crash.AfterStep = func(step int) error {
		if step == 8 { // epoch 2, batch 3: last saved state is step 6 (checkpoint_every 3)
			return errCrash
		}
		return nil
	}
	if _, err := Run(context.Background(), crash); !errors.Is(err, errCrash) {
		t.Fatalf("crashing run: %v", err)
	}
	if _, err := os.Stat(filepath.Join(crash.Pretrain.Out, stateDir, stateFile)); err != nil {
		t.Fatalf("no saved state after the crash: %v", err)
	}
	crash.AfterStep = nil
	got, err := Run(context.Background(), crash)
	if err != nil {
		t.Fatal(err)
	}
	if got.Steps != want.Steps || got.Best.Epoch != want.Best.Epoch || got.Best.ValAgreement != want.Best.ValAgreement {
		t.Errorf("resumed run %+v, uninterrupted %+v", got.Best, want.Best)
	}
	if !sameWeights(finalWeights(t, straight.Pretrain.Out), finalWeights(t, crash.Pretrain.Out)) {
		t.Error("resumed run's checkpoint differs from the uninterrupted run's")
	}
	if !sameWeights(finalWeights(t, filepath.Join(straight.Pretrain.Out, stateDir)), finalWeights(t, filepath.Join(crash.Pretrain.Out, stateDir))) {
		t.Error("resumed run's last weights differ from the uninterrupted run's")
	}

	// A finished run is not trained again.
	again, err := Run(context.Background(), crash)
	if err != nil || again.Steps != want.Steps {
		t.Errorf("rerun of a finished run: %+v, %v", again, err)
	}

	other := smallOptions(ds, filepath.Join(root, "other-seed"))
	other.Seed = 8
	if _, err := Run(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	if sameWeights(finalWeights(t, straight.Pretrain.Out), finalWeights(t, other.Pretrain.Out)) {
		t.Error("seeds 7 and 8 trained the same weights")
	}
	// The same output directory refuses a run of another config instead of mixing them.
	other.Pretrain.LR /= 2
	if _, err := Run(context.Background(), other); err == nil || !strings.Contains(err.Error(), "another config") {
		t.Errorf("reusing out for another config: %v", err)
	}
}

// The trained checkpoint places tasks in the simulator like a heuristic, and never on an
// infeasible node (the simulator would reject it).
func TestCheckpointPlacesInSimulator(t *testing.T) {
	ds := fgdDataset(t, 30, 1, 2)
	o := smallOptions(ds, filepath.Join(t.TempDir(), "bc"))
	o.Pretrain.Epochs, o.Pretrain.StepsPerEpoch = 2, 20
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Best.ValSamples == 0 || res.Best.ValAgreement < res.Best.ValExact {
		t.Errorf("validation metrics %+v", res.Best)
	}
	pol, err := nn.LoadPolicy(o.Pretrain.Out, gotch.CPU)
	if err != nil {
		t.Fatal(err)
	}
	p, err := sim.Prepare(sim.Experiment{NodesPath: smallCluster(t, t.TempDir(), 30), PodsPath: traceFile("openb_pod_list_default.csv"), Tune: 1.3, Seed: 9, Coverage: 0.95})
	if err != nil {
		t.Fatal(err)
	}
	_, r, err := p.Run(pol.NewPlacer(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Placed == 0 || r.Final.GPUAllocPct < 50 {
		t.Errorf("checkpoint placed %d tasks, GPU allocation %.1f%%", r.Placed, r.Final.GPUAllocPct)
	}
	t.Logf("checkpoint on 30 nodes: %d placed, %d failed, GPU allocation %.2f%%; val agreement %.3f (exact %.3f)",
		r.Placed, r.Failed, r.Final.GPUAllocPct, res.Best.ValAgreement, res.Best.ValExact)
}

func TestRunRejectsBadInput(t *testing.T) {
	o := smallOptions(filepath.Join(t.TempDir(), "missing"), filepath.Join(t.TempDir(), "out"))
	if _, err := Run(context.Background(), o); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("missing dataset: %v", err)
	}
	o.Pretrain.BatchSize = 0
	if _, err := Run(context.Background(), o); err == nil || !strings.Contains(err.Error(), "batch_size") {
		t.Errorf("batch_size 0: %v", err)
	}
}
