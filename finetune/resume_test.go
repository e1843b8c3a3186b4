package finetune

import (
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/internal/checkpoint"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/internal/repotest"
	"github.com/schedrl/schedrl/nn"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

func traceDir() string {
	return repotest.OpenbDir()
}

// smallConfig is a seconds-long run on 24..32-node sub-clusters, warm-started from a saved
// network so the KL penalty and its reference policy are exercised too.
func smallConfig(t *testing.T, from, out string) config.Config {
	t.Helper()
	cfg := config.Default()
	cfg.Seed = 11
	cfg.Device = config.DeviceConfig{Name: "cpu", Threads: 1}
	fc := &cfg.Finetune
	fc.From, fc.Out = from, out
	fc.Nodes = filepath.Join(traceDir(), "openb_node_list_gpu_node.csv")
	fc.TracesDir = traceDir()
	fc.ClusterSizes = []int{24, 32}
	fc.NumEnvs, fc.RolloutSteps, fc.Workers = 3, 16, 2
	fc.Stagger = true // its decisions are replayed on resume like any other
	fc.AvgDecay = 0.5 // the averaged weights are checkpointed and restored too
	fc.TiePrior = 1   // rows are sampled with prior masses and nodes within them by tie order
	fc.TotalSteps = 12 * 3 * 16
	fc.Epochs, fc.Minibatches = 2, 3
	fc.CheckpointEvery, fc.EvalEvery = 2, 0
	fc.EvalSeeds, fc.EvalClusterSize = "49", 24
	fc.KLCoef, fc.KLDecay = 0.5, 0.5
	fc.LR = 3e-3 // large, so the weights move visibly in a few updates
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// pretrainedNet is a freshly initialised placement network.
func pretrainedNet(t *testing.T) *nn.Net {
	t.Helper()
	spec, err := env.SpecOf(env.PlacementName)
	if err != nil {
		t.Fatal(err)
	}
	nn.Seed(5)
	var nc config.NetworkConfig
	nc.SetDefaults()
	net, err := nn.NewNet(nn.NewArch(spec, nc, 40), gotch.CPU)
	if err != nil {
		t.Fatal(err)
	}
	return net
}

// pretrained saves a fresh placement network as a checkpoint to start from.
func pretrained(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "pretrained")
	if _, err := nn.SaveCheckpoint(dir, pretrainedNet(t), nn.Lineage{}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// weights loads a checkpoint's VarStore file by tensor name.
func weights(t *testing.T, dir string) map[string][]float64 {
	t.Helper()
	named, err := ts.LoadMulti(filepath.Join(dir, checkpoint.ModelFile))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]float64{}
	for _, nt := range named {
		out[nt.Name] = nt.Tensor.Float64Values(false)
	}
	return out
}

func sameWeights(t *testing.T, a, b map[string][]float64) bool {
	t.Helper()
	if len(a) != len(b) || len(a) == 0 {
		t.Fatalf("weight sets of %d and %d tensors", len(a), len(b))
	}
	for name, w := range a {
		if !slices.Equal(w, b[name]) {
			return false
		}
	}
	return true
}

// killAfterCheckpoint runs this test binary's helper test as a child with env added, training
// into dir, and kills it with SIGKILL once it has checkpointed past update 4 and before it
// finishes.
func killAfterCheckpoint(t *testing.T, helper, dir string, env ...string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+helper+"$")
	cmd.Env = append(os.Environ(), env...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		last, err := latestCheckpoint(dir)
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := strconv.Atoi(filepath.Base(last)); last != "" && n >= 4 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the child wrote no checkpoint past update 4 in time")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if _, err := os.Stat(filepath.Join(dir, checkpoint.ManifestFile)); err == nil {
		t.Fatal("the child finished before the kill; make the run longer")
	}
}

// TestHelperProcess is the child that TestKillResume kills: a training run of the directory
// named by FINETUNE_HELPER_OUT.
func TestHelperProcess(t *testing.T) {
	out := os.Getenv("FINETUNE_HELPER_OUT")
	if out == "" {
		t.Skip("only runs as the child of TestKillResume")
	}
	cfg := smallConfig(t, os.Getenv("FINETUNE_HELPER_FROM"), out)
	if _, err := Run(context.Background(), cfg, Options{}); err != nil {
		t.Fatal(err)
	}
}

// TestKillResume kills a training process with SIGKILL once it has checkpointed, resumes the
// run directory to the end, and requires exactly the weights of an uninterrupted run.
func TestKillResume(t *testing.T) {
	from := pretrained(t)
	straight := filepath.Join(t.TempDir(), "straight")
	res, err := Run(context.Background(), smallConfig(t, from, straight), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Complete || res.Updates != 12 {
		t.Fatalf("uninterrupted run: %+v", res)
	}
	want := weights(t, straight)
	if sameWeights(t, want, weights(t, from)) {
		t.Fatal("training left the weights unchanged; the comparison would prove nothing")
	}

	killed := filepath.Join(t.TempDir(), "killed")
	killAfterCheckpoint(t, "TestHelperProcess", killed, "FINETUNE_HELPER_OUT="+killed, "FINETUNE_HELPER_FROM="+from)

	res, err = Run(context.Background(), smallConfig(t, from, killed), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Resumed || !res.Complete {
		t.Fatalf("resumed run: %+v", res)
	}
	if !sameWeights(t, want, weights(t, killed)) {
		t.Fatal("resumed run ended with different weights than the uninterrupted one")
	}
	recs, err := readRecord(filepath.Join(killed, RecordFile))
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range recs {
		if r.Update != i+1 {
			t.Fatalf("run record line %d is update %d: the resume did not cut the record back", i+1, r.Update)
		}
	}
	if _, err := checkpoint.Read(killed); err != nil {
		t.Fatalf("final checkpoint does not verify: %v", err)
	}
}

// The run keeps the network of its best held-out evaluation in best/: a checkpoint that
// verifies, records that mean, and scores it again when evaluated.
func TestBestCheckpoint(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	cfg := smallConfig(t, pretrained(t), out)
	cfg.Finetune.EvalEvery = 1
	res, err := Run(context.Background(), cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := readRecord(filepath.Join(out, RecordFile))
	if err != nil {
		t.Fatal(err)
	}
	best, at := res.StartMean, 0
	for _, r := range recs {
		if r.HeldOut != nil && *r.HeldOut > best {
			best, at = *r.HeldOut, r.Update
		}
	}
	if at == 0 {
		t.Fatalf("no evaluation beat the start (%v); the test needs a setting where one does", res.StartMean)
	}
	if res.BestUpdate != at || res.BestMean != best {
		t.Fatalf("result says best %v at update %d, the record %v at %d", res.BestMean, res.BestUpdate, best, at)
	}
	if d := res.FinalVsStart; d == nil || d.Diff.N != len(res.Start.Seeds) ||
		math.Abs(d.Diff.Mean-(res.FinalMean-res.StartMean)) > 1e-9 || d.Wins+d.Ties+d.Losses != d.Diff.N {
		t.Fatalf("final vs start = %+v, want the %d seeds paired (%v -> %v)", d, len(res.Start.Seeds), res.StartMean, res.FinalMean)
	}
	dir := filepath.Join(out, BestDir)
	m, err := checkpoint.Read(dir)
	if err != nil {
		t.Fatalf("best checkpoint does not verify: %v", err)
	}
	if got := m.Metrics["held_out_mean_alloc_gpu_pct"]; got != best {
		t.Fatalf("best checkpoint records %v, want %v", got, best)
	}
	net, _, err := nn.LoadCheckpoint(dir, gotch.CPU)
	if err != nil {
		t.Fatal(err)
	}
	eps, err := newEpisodes(cfg.Finetune)
	if err != nil {
		t.Fatal(err)
	}
	h, err := eps.evaluate(policy{net: net, dev: gotch.CPU, temperature: 1}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if h.Mean != best {
		t.Fatalf("best checkpoint evaluates to %v, recorded %v", h.Mean, best)
	}
}

// best/ holds the start network from the first evaluation on, so a run in which nothing beats
// its start still has a best/ to evaluate.
func TestBestCheckpointFromStart(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	res, err := Run(context.Background(), smallConfig(t, pretrained(t), out), Options{StopAfter: 1})
	if err != nil {
		t.Fatal(err)
	}
	m, err := checkpoint.Read(filepath.Join(out, BestDir))
	if err != nil {
		t.Fatalf("no best checkpoint after the start evaluation: %v", err)
	}
	if got := m.Metrics["held_out_mean_alloc_gpu_pct"]; got != res.StartMean {
		t.Fatalf("best checkpoint records %v, the start evaluated to %v", got, res.StartMean)
	}
}
