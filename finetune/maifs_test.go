package finetune

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sugarme/gotch"

	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/fungible"
	"github.com/schedrl/schedrl/fungible/fungibletest"
	"github.com/schedrl/schedrl/internal/checkpoint"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/internal/repotest"
	"github.com/schedrl/schedrl/nn"
	"github.com/schedrl/schedrl/pretrain"
)

// maifsClone behaviour-clones a small MAIFS network from TUNE in SRTF order on an 8:8:8
// cluster, with the environment options of the maifs section sec.
func maifsClone(t *testing.T, sec config.MAIFSConfig) string {
	t.Helper()
	m := fungibletest.Model(t)
	e, err := env.NewMAIFS(fungibletest.Cluster(t, sec.Cluster), m, env.MAIFSOptions{Window: sec.Window, Partners: sec.Partners, MakespanWeight: sec.MakespanWeight})
	if err != nil {
		t.Fatal(err)
	}
	rec := &env.MAIFSRecorder{Env: e, Rule: fungible.Tune, Every: 4}
	if _, err := fungible.Run(e.Cluster(), m, fungibletest.Work(t, m, 30, 400, 1001), fungible.RunConfig{Policy: rec, Order: fungibletest.Order(t, "srtf")}); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "bc")
	if _, err := pretrain.RunMAIFS(context.Background(), pretrain.MAIFSOptions{Arch: nn.NewMAIFSArch(16, 2, 16, true, e.Options()),
		Train: rec.Samples, Epochs: 2, Batch: 8, LR: 1e-3, OrderWeight: 1, Seed: 3, Dev: gotch.CPU, Out: dir}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// maifsConfig is a seconds-long maifs run: 20-job episodes on 8:8:8, the held-out check on one
// 20-job workload.
func maifsConfig(t *testing.T, out string) config.Config {
	t.Helper()
	cfg := config.Default()
	cfg.Seed = 7
	cfg.Device = config.DeviceConfig{Name: "cpu", Threads: 1}
	sec := &cfg.MAIFS
	sec.Cluster = "8:8:8"
	sec.Throughputs, sec.Profiles = repotest.Data("gavel", "simulation_throughputs.json"), repotest.Data("synergy", "profiles.json")
	sec.Mapping = repotest.Data("fungible", "gavel_synergy_models.csv")
	sec.Generate, sec.PPOGenerate = []string{"jobs=20,lam=400,multigpu"}, []string{"jobs=20,lam=300,multigpu", "jobs=20,lam=600,multigpu"}
	fc := &cfg.Finetune
	fc.Env, fc.Out = env.MAIFSName, out
	fc.NumEnvs, fc.RolloutSteps, fc.TotalSteps = 2, 24, 6*2*24
	fc.Epochs, fc.Minibatches, fc.LR = 2, 3, 1e-3
	fc.KLCoef, fc.KLDecay, fc.EntCoef = 0.5, 1, 0.01
	fc.CheckpointEvery, fc.EvalEvery = 2, 3
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// A fresh trainer's rollout records, per agent, the log-probability the update recomputes
// under that agent's turn mask: at unchanged weights every ratio is 1. Every sampled candidate
// was open at its turn, every deciding agent's probabilities sum to 1 over its open set.
func TestMAIFSRolloutLogProbsAreTheUpdates(t *testing.T) {
	cfg := maifsConfig(t, t.TempDir())
	cfg.Finetune.From = maifsClone(t, cfg.MAIFS)
	tr, err := newMAIFSTrainer(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.close()
	if err := tr.rollout(); err != nil {
		t.Fatal(err)
	}
	samples := make([]*maifsSample, len(tr.samples))
	deciding := 0
	for i := range tr.samples {
		samples[i] = &tr.samples[i]
		for a, open := range samples[i].open {
			if !open[samples[i].action[a]] {
				t.Fatalf("sample %d agent %d took closed candidate %d", i, a, samples[i].action[a])
			}
			if count(open) > 1 {
				deciding++
			}
		}
	}
	if deciding == 0 {
		t.Fatal("no agent had a choice")
	}
	mb, err := newMAIFSBatch(tr.net.Arch, samples, make([]float32, len(samples)), nil, false)
	if err != nil {
		t.Fatal(err)
	}
	nn.NoGrad(func() {
		s := nn.NewScope(tr.dev)
		defer s.Drop()
		in := mb.host.Tensors(s, tr.dev)
		logp, open := agentLogp(s, tr.net.Forward(s, in), in, mb.rows, tr.fc.Temperature)
		d := dist{logp: logp}
		got := nn.HostFloats(d.logProb(s, mb.actions), nil)
		if len(got) != deciding {
			t.Fatalf("%d deciding agents in the batch, %d in the rollout", len(got), deciding)
		}
		for r := range got {
			if math.Abs(float64(got[r]-mb.oldLogp[r])) > 1e-4 {
				t.Fatalf("deciding agent %d: update log-prob %v, rollout's %v", r, got[r], mb.oldLogp[r])
			}
		}
		probs := nn.HostFloats(s.Own(logp.MustExp(false).MustMul(open, true).MustSumDimIntlist([]int64{1}, false, gotch.Float, true)), nil)
		for r, p := range probs {
			if math.Abs(float64(p)-1) > 1e-4 {
				t.Fatalf("deciding agent %d: probabilities over its open candidates sum to %v", r, p)
			}
		}
	})
}

// Repeated updates on one rollout move the loss terms the way PPO should: the clipped
// surrogate falls below its start (actions with positive advantage gain probability) and the
// critic's value loss falls.
func TestMAIFSUpdateMovesTheLossTerms(t *testing.T) {
	cfg := maifsConfig(t, t.TempDir())
	cfg.Finetune.From = maifsClone(t, cfg.MAIFS)
	cfg.Finetune.NormAdv, cfg.Finetune.ClipCoef, cfg.Finetune.EntCoef, cfg.Finetune.KLCoef = true, 10, 0, 0
	tr, err := newMAIFSTrainer(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.close()
	if err := tr.rollout(); err != nil {
		t.Fatal(err)
	}
	before, err := tr.update(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if _, err := tr.update(3e-3, 0); err != nil {
			t.Fatal(err)
		}
	}
	after, err := tr.update(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !(after.PolicyLoss < before.PolicyLoss-1e-3) || !(after.ValueLoss < before.ValueLoss) {
		t.Fatalf("policy loss %.5f -> %.5f, value loss %.5f -> %.5f", before.PolicyLoss, after.PolicyLoss, before.ValueLoss, after.ValueLoss)
	}
}

// Two runs of one config reach the same weights; a run stopped after 3 updates (checkpoint at
// 2, so the worlds are replayed from their recorded moves) and resumed reaches them too. The
// finished run directory is a MAIFS checkpoint `schedrl jobs --policy ckpt:DIR` loads, with
// the record's held-out checks.
func TestMAIFSDeterministicAndResumes(t *testing.T) {
	from := ""
	run := func(out string, stop int) Result {
		cfg := maifsConfig(t, out)
		if from == "" {
			from = maifsClone(t, cfg.MAIFS)
		}
		cfg.Finetune.From = from
		res, err := Run(context.Background(), cfg, Options{StopAfter: stop})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	a, b, c := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b"), filepath.Join(t.TempDir(), "c")
	ra := run(a, 0)
	run(b, 0)
	if stopped := run(c, 3); stopped.Complete || stopped.Updates != 3 {
		t.Fatalf("stopped run: %+v", stopped)
	}
	rc := run(c, 0)
	if !ra.Complete || !rc.Complete || !rc.Resumed || ra.Updates != 6 {
		t.Fatalf("runs: %+v, %+v", ra, rc)
	}
	wa := weights(t, a)
	if !sameWeights(t, wa, weights(t, b)) {
		t.Fatal("same seed, other weights")
	}
	if !sameWeights(t, wa, weights(t, c)) {
		t.Fatal("the resumed run reached other weights than the uninterrupted one")
	}
	if sameWeights(t, wa, weights(t, from)) {
		t.Fatal("training did not change the weights")
	}
	if _, _, err := nn.LoadMAIFS(a, gotch.CPU); err != nil {
		t.Fatal(err)
	}
	recs, err := readRecord(filepath.Join(a, RecordFile))
	if err != nil || len(recs) != 6 || recs[2].HeldOutAvgJCT == nil || recs[5].HeldOutMakespan == nil || recs[0].ExplainedVar == nil ||
		recs[0].DecidingAgents == nil || !(*recs[0].DecidingAgents > 0) {
		t.Fatalf("record %d lines (%v)", len(recs), err)
	}
	if ra.Start.MAIFS == nil || ra.Final.MAIFS == nil || !(ra.Final.MAIFS.AvgJCT > 0) {
		t.Fatalf("result %+v", ra)
	}
}

// Bad configs are refused before any work, naming the key.
func TestMAIFSBadConfig(t *testing.T) {
	base := maifsConfig(t, t.TempDir())
	from := maifsClone(t, base.MAIFS)
	for want, edit := range map[string]func(*config.Config){
		"finetune.from: env maifs starts from a maifs-bc checkpoint": func(c *config.Config) { c.Finetune.From = "none" },
		"finetune.avg_decay":      func(c *config.Config) { c.Finetune.AvgDecay = 0.5 },
		"maifs.ppo_generate[0]":   func(c *config.Config) { c.MAIFS.PPOGenerate = []string{"jobs=ten"} },
		"maifs.val_seeds: seed 5": func(c *config.Config) { c.MAIFS.ValSeeds = "5" },
		"environment options":     func(c *config.Config) { c.MAIFS.Window = 7 },
		"maifs.throughputs":       func(c *config.Config) { c.MAIFS.Throughputs = filepath.Join(t.TempDir(), "none.json") },
	} {
		cfg := base
		cfg.Finetune.From = from
		if want == "maifs.val_seeds: seed 5" {
			cfg.MAIFS.HeldOut = "5"
		}
		edit(&cfg)
		if _, err := Run(context.Background(), cfg, Options{}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", want, err)
		}
	}
}

// The makespan weight only prices the reward: a fine-tune may set another than its clone's,
// and its network then records the weight it is trained at.
func TestMAIFSMakespanWeightIsTheFineTunes(t *testing.T) {
	cfg := maifsConfig(t, t.TempDir())
	cfg.Finetune.From = maifsClone(t, cfg.MAIFS)
	cfg.MAIFS.MakespanWeight = 10
	tr, err := newMAIFSTrainer(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.close()
	if got := tr.net.Arch.Options.MakespanWeight; got != 10 {
		t.Fatalf("network's makespan weight %v, want 10", got)
	}
	if got := tr.src.opts.MakespanWeight; got != 10 {
		t.Fatalf("worlds' makespan weight %v, want 10", got)
	}
}

// maifsLongConfig is maifsConfig over 12 updates, long enough to be killed mid-run.
func maifsLongConfig(t *testing.T, from, out string) config.Config {
	cfg := maifsConfig(t, out)
	cfg.Finetune.From, cfg.Finetune.TotalSteps = from, 12*2*24
	return cfg
}

// TestMAIFSHelperProcess is the child TestMAIFSKillResume kills.
func TestMAIFSHelperProcess(t *testing.T) {
	out := os.Getenv("FINETUNE_MAIFS_HELPER_OUT")
	if out == "" {
		t.Skip("only runs as the child of TestMAIFSKillResume")
	}
	if _, err := Run(context.Background(), maifsLongConfig(t, os.Getenv("FINETUNE_MAIFS_HELPER_FROM"), out), Options{}); err != nil {
		t.Fatal(err)
	}
}

// A maifs run killed with SIGKILL after a checkpoint resumes to exactly the weights and run
// record of an uninterrupted run.
func TestMAIFSKillResume(t *testing.T) {
	from := maifsClone(t, maifsConfig(t, t.TempDir()).MAIFS)
	straight, killed := filepath.Join(t.TempDir(), "straight"), filepath.Join(t.TempDir(), "killed")
	if res, err := Run(context.Background(), maifsLongConfig(t, from, straight), Options{}); err != nil || !res.Complete {
		t.Fatalf("uninterrupted run: %+v (%v)", res, err)
	}
	killAfterCheckpoint(t, "TestMAIFSHelperProcess", killed, "FINETUNE_MAIFS_HELPER_OUT="+killed, "FINETUNE_MAIFS_HELPER_FROM="+from)
	res, err := Run(context.Background(), maifsLongConfig(t, from, killed), Options{})
	if err != nil || !res.Resumed || !res.Complete {
		t.Fatalf("resumed run: %+v (%v)", res, err)
	}
	if !sameWeights(t, weights(t, straight), weights(t, killed)) {
		t.Fatal("the resumed run ended with other weights than the uninterrupted one")
	}
	a, errA := readRecord(filepath.Join(straight, RecordFile))
	b, errB := readRecord(filepath.Join(killed, RecordFile))
	if errA != nil || errB != nil || len(a) != 12 || len(b) != 12 {
		t.Fatalf("records of %d and %d lines (%v, %v)", len(a), len(b), errA, errB)
	}
	for i := range a {
		if a[i].PolicyLoss != b[i].PolicyLoss || a[i].ValueLoss != b[i].ValueLoss || a[i].Update != i+1 || b[i].Update != i+1 {
			t.Fatalf("update %d: uninterrupted %+v, resumed %+v", i+1, a[i], b[i])
		}
	}
	if _, err := checkpoint.Read(filepath.Join(killed, BestDir)); err != nil {
		t.Fatal(err)
	}
}

// The shaped reward is the plain one plus shaping × (γΦ(s') − Φ(s)), Φ minus the work left to
// the jobs of s: two trainers that differ only in maifs.shaping take the same actions, and each
// decision point's rewards differ by exactly that term, computed here from the observations (a
// job absent from the next one has finished; one that arrived is not counted).
func TestMAIFSShapedReward(t *testing.T) {
	if got := potentialDiff(map[int]float64{1: 3, 2: 1}, map[int]float64{1: 2, 3: 5}, 0.5); got != 3 {
		t.Fatalf("potential difference %g, want 4 - 0.5*2 = 3", got)
	}
	from := maifsClone(t, maifsConfig(t, t.TempDir()).MAIFS)
	rollout := func(shaping float64) *maifsTrainer {
		cfg := maifsConfig(t, t.TempDir())
		cfg.Finetune.From = from
		cfg.MAIFS.Shaping = shaping
		tr, err := newMAIFSTrainer(cfg, Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(tr.close)
		if err := tr.rollout(); err != nil {
			t.Fatal(err)
		}
		return tr
	}
	plain, shaped := rollout(0), rollout(2)
	n, gamma := len(plain.worlds), plain.fc.Gamma
	left := func(s maifsSample) map[int]float64 {
		m := map[int]float64{}
		for _, st := range s.obs.Jobs {
			m[st.ID] = plain.worlds[0].e.WorkLeft(st)
		}
		return m
	}
	checked := 0
	for i := range len(plain.samples) - n {
		p, s := plain.samples[i], shaped.samples[i]
		if !slices.Equal(p.action, s.action) {
			t.Fatalf("decision point %d: actions %v and %v", i, p.action, s.action)
		}
		if p.done {
			continue
		}
		want := p.reward + float32(2*potentialDiff(left(p), left(plain.samples[i+n]), gamma)/maifsRewardScale)
		if math.Abs(float64(s.reward-want)) > 1e-6 {
			t.Fatalf("decision point %d: shaped reward %v, want %v (plain %v)", i, s.reward, want, p.reward)
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no decision point checked")
	}
}
