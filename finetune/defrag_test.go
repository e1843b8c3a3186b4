package finetune

import (
	"context"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/nn"
	"github.com/sugarme/gotch"
)

// smallDefragConfig is a seconds-long defrag run from scratch on fragmented 20..28-node
// sub-cluster states of four training seeds, held out on one 24-node state of seed 49.
func smallDefragConfig(t *testing.T, out string) config.Config {
	t.Helper()
	cfg := smallConfig(t, "none", out)
	fc := &cfg.Finetune
	fc.Env = env.DefragName
	fc.Stagger, fc.TiePrior = false, 0 // placement only
	fc.Seeds = "1000-1003"
	fc.ClusterSizes = []int{20, 28}
	fc.TotalSteps = 4 * 3 * 16
	fc.KLCoef = 0
	cfg.Defrag.Budget = 300 // for 1213 nodes: 5, 6 and 7 migrations on 20, 24 and 28 nodes
	cfg.Defrag.MaxPending = 20
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func finiteAll(t *testing.T, what string, xs ...float64) {
	t.Helper()
	for i, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			t.Fatalf("%s[%d] = %v", what, i, x)
		}
	}
}

// A short run from scratch trains, evaluates its plans on the held-out state and records
// finite metrics; the held-out plan starts from the state the defrag protocol makes.
func TestDefragFromScratch(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	res, err := Run(context.Background(), smallDefragConfig(t, out), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Complete || res.Updates != 4 || res.Start.Defrag == nil || res.Final.Defrag == nil {
		t.Fatalf("result %+v", res)
	}
	recs, err := readRecord(filepath.Join(out, RecordFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 4 {
		t.Fatalf("%d record lines, want 4", len(recs))
	}
	episodes := 0
	for _, r := range recs {
		finiteAll(t, "update metrics", r.KLRef, r.ApproxKL, r.ClipFrac, r.Entropy, r.PolicyLoss, r.ValueLoss, r.GradNorm, r.StepsPerSec)
		if r.HeldOut != nil || r.EpisodeAllocPct != nil {
			t.Fatalf("update %d has placement metrics", r.Update)
		}
		if r.EpisodicReturn != nil {
			episodes += r.Episodes
			finiteAll(t, "episode metrics", *r.EpisodicReturn, *r.EpisodeFragRatio, *r.EpisodePendingGPUs, *r.EpisodeMigrations)
		}
	}
	if episodes == 0 {
		t.Fatal("no training episode ended: the run never reached STOP or the budget")
	}
	last := recs[len(recs)-1]
	if last.HeldOutFragAfter == nil {
		t.Fatal("the last update has no held-out evaluation")
	}
	finiteAll(t, "held-out", *last.HeldOutFragBefore, *last.HeldOutFragAfter, *last.HeldOutPending,
		*last.HeldOutPendingGPUs, *last.HeldOutMigrations, *last.HeldOutReward)
	m := res.Final.Defrag.Mean
	if m.Migrations > 6 || m.FragRatioBefore <= 0 { // 6: the 24-node share of 300
		t.Fatalf("held-out plans: %+v (budget 6)", m)
	}
}

// Rollouts only ever take allowed candidates, in both stages; STOP is allowed and taken too.
func TestDefragRolloutRespectsMasks(t *testing.T) {
	cfg := smallDefragConfig(t, t.TempDir())
	src, err := newDefragEpisodes(cfg)
	if err != nil {
		t.Fatal(err)
	}
	nn.Seed(3)
	net, err := nn.NewNet(nn.NewArch(src.spec(), cfg.Network, 30), gotch.CPU)
	if err != nil {
		t.Fatal(err)
	}
	pol := policy{net: net, dev: gotch.CPU, temperature: 1}
	pl := &pool{eps: src, slots: make([]*slot, 4), workers: 2}
	for i := range pl.slots {
		pl.slots[i] = &slot{}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	if err := pl.startFresh(allSlots(4), rng); err != nil {
		t.Fatal(err)
	}
	r := newRollout(64, 4)
	stages, stops, rejected := [2]int{}, 0, 0
	for range 3 {
		if err := pl.collect(pol, r, rng); err != nil {
			t.Fatal(err) // the environment refuses infeasible actions: collect would fail
		}
		for i, s := range r.samples {
			if !s.obs.Mask[s.action] {
				t.Fatalf("sample %d (stage %d) took masked row %d", i, s.obs.Stage, s.action)
			}
			for row, ok := range s.obs.Mask {
				rejected += int(s.count[row]) * btoi(!ok)
			}
			stages[s.obs.Stage]++
			// STOP is stage one's last row and the only one with the stop feature set.
			if s.obs.Stage == 0 && s.done && s.reward == 0 && s.obs.Nodes[(s.action+1)*net.Arch.NodeDim-1] == 1 {
				stops++
			}
		}
	}
	if stages[0] == 0 || stages[1] == 0 {
		t.Fatalf("decisions by stage %v: both stages should occur", stages)
	}
	if rejected == 0 {
		t.Fatal("no candidate was ever masked: the check proves nothing")
	}
	if stops == 0 {
		t.Fatal("the policy never stopped in 768 decisions")
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// A defrag run stopped midway and resumed ends with the weights of an uninterrupted run:
// episodes are rebuilt from their draw (cached states cloned) by replaying their actions.
func TestDefragResume(t *testing.T) {
	straight := filepath.Join(t.TempDir(), "straight")
	if _, err := Run(context.Background(), smallDefragConfig(t, straight), Options{}); err != nil {
		t.Fatal(err)
	}
	stopped := filepath.Join(t.TempDir(), "stopped")
	res, err := Run(context.Background(), smallDefragConfig(t, stopped), Options{StopAfter: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.Complete {
		t.Fatal("the stopped run completed")
	}
	res, err = Run(context.Background(), smallDefragConfig(t, stopped), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Resumed || !res.Complete {
		t.Fatalf("resumed run: %+v", res)
	}
	if !sameWeights(t, weights(t, straight), weights(t, stopped)) {
		t.Fatal("the resumed defrag run ended with different weights")
	}
}
