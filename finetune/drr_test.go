package finetune

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/schedrl/schedrl/defrag/online"
)

// A short DRR run from scratch steps placement episodes of the timed world, trains, and
// evaluates the network as the placer on the held-out timeline, recording its fragmentation
// rate and delay.
func TestDRRFromScratch(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	cfg := smallOnlineConfig(t, out)
	cfg.Finetune.Env = online.DRREnvName
	cfg.DefragOnline.Loads = []float64{0.9}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Complete || res.Updates != 3 {
		t.Fatalf("result %+v", res)
	}
	recs, err := readRecord(filepath.Join(out, RecordFile))
	if err != nil {
		t.Fatal(err)
	}
	last := recs[len(recs)-1]
	if last.HeldOutFragRatioMean == nil || *last.HeldOutFragRatioMean <= 0 || last.HeldOutGPUDelay == nil {
		t.Fatalf("the last update has no held-out rate: %+v", last)
	}
	finiteAll(t, "update metrics", last.PolicyLoss, last.ValueLoss, last.Entropy, *last.HeldOutFragRatioMean)
}
