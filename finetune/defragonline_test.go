package finetune

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedrl/schedrl/defrag/online"
	"github.com/schedrl/schedrl/internal/config"
)

// smallOnlineConfig is a short defrag-online run from scratch: 2 h timelines at load 1.1 on
// 80-node sub-clusters, where a queue forms and the trigger invokes the agent, held out on
// one 80-node timeline of seed 900.
func smallOnlineConfig(t *testing.T, out string) config.Config {
	t.Helper()
	cfg := smallConfig(t, "none", out)
	fc := &cfg.Finetune
	fc.Env = online.EnvName
	fc.Stagger, fc.TiePrior, fc.AvgDecay = false, 0, 0
	fc.Seeds = "1000-1003"
	fc.ClusterSizes = []int{80}
	fc.NumEnvs, fc.RolloutSteps = 2, 16
	fc.TotalSteps = 3 * 2 * 16
	fc.KLCoef = 0
	fc.EvalSeeds, fc.EvalClusterSize = "900", 80
	d := &cfg.DefragOnline
	d.Loads = []float64{1.1}
	d.Duration, d.Warmup, d.Cap = 7200, 1800, 3600
	d.Every, d.HeadWait = 300, 60
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// A short run from scratch steps defrag-online episodes, trains and evaluates the network as
// the online method on the held-out timeline, and records finite metrics.
func TestDefragOnlineFromScratch(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	res, err := Run(context.Background(), smallOnlineConfig(t, out), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Complete || res.Updates != 3 || res.Final.Defrag == nil {
		t.Fatalf("result %+v", res)
	}
	recs, err := readRecord(filepath.Join(out, RecordFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		finiteAll(t, "update metrics", r.KLRef, r.ApproxKL, r.ClipFrac, r.Entropy, r.PolicyLoss, r.ValueLoss, r.GradNorm)
	}
	if last := recs[len(recs)-1]; last.HeldOutReward == nil || last.HeldOutMigrations == nil || last.HeldOutWholeGPUDelay == nil {
		t.Fatalf("the last update has no held-out evaluation: %+v", last)
	}
	if m := res.Final.Defrag.Mean; !m.Online || m.WholeGPUDelay <= 0 {
		t.Errorf("held-out whole-GPU delay %v: the load-1.1 timeline queues", m.WholeGPUDelay)
	}
}

// Training refuses the held-out timelines, naming the keys.
func TestDefragOnlineRefusesHeldOutSeeds(t *testing.T) {
	cfg := smallOnlineConfig(t, filepath.Join(t.TempDir(), "run"))
	cfg.Finetune.Seeds = "100-102"
	if _, err := Run(context.Background(), cfg, Options{}); err == nil || !strings.Contains(err.Error(), "held_out_seeds") {
		t.Errorf("held-out seed in training: %v", err)
	}
	cfg = smallOnlineConfig(t, filepath.Join(t.TempDir(), "run"))
	cfg.DefragOnline.Budget = 0
	if _, err := Run(context.Background(), cfg, Options{}); err == nil || !strings.Contains(err.Error(), "defrag_online.budget") {
		t.Errorf("budget 0: %v", err)
	}
}
