package pretrain

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/sugarme/gotch"

	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/fungible"
	"github.com/schedrl/schedrl/fungible/fungibletest"
	"github.com/schedrl/schedrl/nn"
)

// expertSamples records TUNE in SRTF order on a generated workload.
func expertSamples(t *testing.T, e *env.MAIFS, m fungible.SpeedModel, n int, seed uint64) []env.MAIFSSample {
	t.Helper()
	rec := &env.MAIFSRecorder{Env: e, Rule: fungible.Tune, Every: 8}
	work := fungibletest.Work(t, m, n, 400, seed)
	if _, err := fungible.Run(e.Cluster(), m, work, fungible.RunConfig{Policy: rec, Order: fungibletest.Order(t, "srtf")}); err != nil {
		t.Fatal(err)
	}
	return rec.Samples
}

// Behaviour cloning raises the tie-aware agreement with the expert on held-out decision points
// well above the untrained network's, the loss falls, and the checkpoint records the metrics.
func TestRunMAIFSClonesTheExpert(t *testing.T) {
	m := fungibletest.Model(t)
	e, err := env.NewMAIFS(fungibletest.Cluster(t, "8:8:8"), m, env.MAIFSOptions{})
	if err != nil {
		t.Fatal(err)
	}
	train, val := expertSamples(t, e, m, 40, 11), expertSamples(t, e, m, 30, 12)
	arch := nn.NewMAIFSArch(32, 4, 32, true, e.Options())
	nn.Seed(5)
	fresh, err := nn.NewMAIFSNet(arch, gotch.CPU)
	if err != nil {
		t.Fatal(err)
	}
	before, _, err := MAIFSAgreement(fresh, gotch.CPU, val)
	if err != nil {
		t.Fatal(err)
	}
	var losses []float64
	dir := filepath.Join(t.TempDir(), "bc")
	res, err := RunMAIFS(context.Background(), MAIFSOptions{Arch: arch, Train: train, Val: val, Epochs: 8, Batch: 8, LR: 3e-3, OrderWeight: 1,
		Seed: 5, Dev: gotch.CPU, Out: dir, Progress: func(_ int, loss, _ float64) { losses = append(losses, loss) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d train, %d val points; agreement %.3f -> %.3f (exact %.3f), loss %.3f -> %.3f", len(train), len(val), before, res.Agreement, res.Exact, losses[0], losses[len(losses)-1])
	if !(res.Agreement > before+0.2) || !(res.Agreement > 0.6) {
		t.Fatalf("validation agreement %.3f after cloning, %.3f before", res.Agreement, before)
	}
	if !(losses[len(losses)-1] < losses[0]) {
		t.Fatalf("loss went from %g to %g", losses[0], losses[len(losses)-1])
	}
	_, man, err := nn.LoadMAIFS(dir, gotch.CPU)
	if err != nil {
		t.Fatal(err)
	}
	if man.Metrics["val_agreement"] != res.Agreement {
		t.Fatalf("manifest val_agreement %v, run %v", man.Metrics["val_agreement"], res.Agreement)
	}
}

// Bad options are refused before any training.
func TestRunMAIFSRefusesBadOptions(t *testing.T) {
	if _, err := RunMAIFS(context.Background(), MAIFSOptions{}); err == nil {
		t.Fatal("no samples accepted")
	}
	if _, err := RunMAIFS(context.Background(), MAIFSOptions{Train: make([]env.MAIFSSample, 1), Epochs: 0, Batch: 1, LR: 1}); err == nil {
		t.Fatal("0 epochs accepted")
	}
}

// With label smoothing ε the candidates' loss is (1-ε) times the cross-entropy against the
// expert plus ε times the mean negative log-probability of the candidates open at each agent's
// turn, recomputed here from the network's logits.
func TestMAIFSLossSmoothsOverOpenCandidates(t *testing.T) {
	m := fungibletest.Model(t)
	e, err := env.NewMAIFS(fungibletest.Cluster(t, "8:8:8"), m, env.MAIFSOptions{})
	if err != nil {
		t.Fatal(err)
	}
	batch := expertSamples(t, e, m, 30, 11)[:4]
	arch := nn.NewMAIFSArch(16, 2, 16, true, e.Options())
	nn.Seed(3)
	net, err := nn.NewMAIFSNet(arch, gotch.CPU)
	if err != nil {
		t.Fatal(err)
	}
	obs := make([]*env.MAIFSObs, len(batch))
	for b, s := range batch {
		obs[b] = s.Obs
	}
	h, err := nn.NewMAIFSHost(arch, obs)
	if err != nil {
		t.Fatal(err)
	}
	for b, s := range batch {
		h.MaskTurns(b, s.Turn)
	}
	nn.NoGrad(func() {
		s := nn.NewScope(gotch.CPU)
		defer s.Drop()
		out := net.Forward(s, h.Tensors(s, gotch.CPU))
		ce := MAIFSLoss(s, gotch.CPU, out, batch, h, 0, 0).Float64Values(false)[0]
		smoothed := MAIFSLoss(s, gotch.CPU, out, batch, h, 0, 0.2).Float64Values(false)[0]
		logits := nn.HostFloats(out.Logits, nil)
		var spread float64
		agents := 0
		for b, smp := range batch {
			for i, cands := range smp.Obs.Cand {
				row := logits[(b*h.N+i)*h.K : (b*h.N+i+1)*h.K]
				top := math.Inf(-1)
				for _, l := range row {
					top = max(top, float64(l))
				}
				lse := 0.0
				for _, l := range row {
					lse += math.Exp(float64(l) - top)
				}
				lse = top + math.Log(lse)
				sum, open := 0.0, 0
				for k, c := range cands {
					if c.Feasible && smp.Turn[i][k] {
						sum -= float64(row[k]) - lse
						open++
					}
				}
				spread += sum / float64(open)
				agents++
			}
		}
		spread /= float64(agents)
		if want := 0.8*ce + 0.2*spread; math.Abs(smoothed-want) > 1e-4*math.Abs(want) {
			t.Fatalf("smoothed loss %g, want 0.8 x %g + 0.2 x %g = %g", smoothed, ce, spread, want)
		}
		if math.Abs(smoothed-ce) < 1e-6 {
			t.Fatalf("smoothing changed nothing: %g", smoothed)
		}
	})
}
