package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sugarme/gotch/ts"

	"github.com/schedrl/schedrl/eval"
	"github.com/schedrl/schedrl/family"
	"github.com/schedrl/schedrl/finetune"
	"github.com/schedrl/schedrl/internal/atomicfile"
	"github.com/schedrl/schedrl/internal/checkpoint"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/pipeline"
	"github.com/schedrl/schedrl/pretrain"
)

// The toy family lives in this file alone: a world of two numbers where the policy picks the
// larger, an expert that always does, and a one-layer network (a 2x2 linear map to the two
// choices' logits, saved as a libtorch tensor). It registers every hook the pipeline asks a
// family for, so that TestToyFamilyPipeline shows what a new family needs and nothing more.
const toyName = "toy"

func init() {
	family.Register(family.Family{
		Name:       toyName,
		ExpertLogs: func(cfg config.Config) (pipeline.Stage, error) { return newToyLogs(cfg) },
		Dataset:    &family.Dataset{Build: buildToyDataset},
		Evaluate:   evaluateToy,
	})
	pretrain.Register(toyName, cloneToy)
	finetune.Register(toyName, fineTuneToy)
}

// toyDecision is one decision of the toy world: the two numbers and the larger one's index.
type toyDecision struct {
	X      [2]float64 `json:"x"`
	Action int        `json:"action"`
}

// toyDecisions are n decisions drawn from seed, each labelled with the expert's choice.
func toyDecisions(seed uint64, n int) []toyDecision {
	rng := rand.New(rand.NewPCG(seed, 0x746f79)) // stream "toy"
	out := make([]toyDecision, n)
	for i := range out {
		d := toyDecision{X: [2]float64{rng.Float64(), rng.Float64()}}
		if d.X[1] > d.X[0] {
			d.Action = 1
		}
		out[i] = d
	}
	return out
}

// toyLogs is the toy's logs stage: the expert's decisions on each pipeline.log_seeds seed.
type toyLogs struct{ seeds []uint64 }

func newToyLogs(cfg config.Config) (*toyLogs, error) {
	seeds, err := config.ParseSeeds(cfg.Pipeline.LogSeeds)
	if err != nil {
		return nil, fmt.Errorf("pipeline.log_seeds: %w", err)
	}
	return &toyLogs{seeds: seeds}, nil
}

func (s *toyLogs) Name() string     { return "logs" }
func (s *toyLogs) Inputs() []string { return nil }
func (s *toyLogs) Config() any      { return map[string]any{"toy_seeds": s.seeds} }

func (s *toyLogs) Run(_ context.Context, e pipeline.Env) (pipeline.Result, error) {
	for _, seed := range s.seeds {
		var b strings.Builder
		enc := json.NewEncoder(&b)
		for _, d := range toyDecisions(seed, 100) {
			if err := enc.Encode(d); err != nil {
				return pipeline.Result{}, err
			}
		}
		if err := os.WriteFile(filepath.Join(e.OutDir, fmt.Sprintf("toy-seed%d.jsonl", seed)), []byte(b.String()), 0o644); err != nil {
			return pipeline.Result{}, err
		}
	}
	return pipeline.Result{Metric: &pipeline.Metric{Name: "logs", Value: float64(len(s.seeds))}}, nil
}

// buildToyDataset gathers the logs' decisions into one JSON file.
func buildToyDataset(_ context.Context, cfg config.Config, _ *slog.Logger) (pipeline.Result, error) {
	files, err := filepath.Glob(cfg.Datasets.Logs)
	if err != nil || len(files) == 0 {
		return pipeline.Result{}, fmt.Errorf("datasets.logs %q: no toy logs", cfg.Datasets.Logs)
	}
	var rows []toyDecision
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return pipeline.Result{}, err
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			var d toyDecision
			if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
				fh.Close()
				return pipeline.Result{}, fmt.Errorf("%s: %w", f, err)
			}
			rows = append(rows, d)
		}
		fh.Close()
	}
	data, err := json.Marshal(rows)
	if err != nil {
		return pipeline.Result{}, err
	}
	if err := os.MkdirAll(cfg.Datasets.Out, 0o755); err != nil {
		return pipeline.Result{}, err
	}
	if err := atomicfile.WriteFile(filepath.Join(cfg.Datasets.Out, "rows.json"), data, 0o644); err != nil {
		return pipeline.Result{}, err
	}
	return pipeline.Result{Metric: &pipeline.Metric{Name: "rows", Value: float64(len(rows))}}, nil
}

// toyNet is the one-layer network: logits = W x.
type toyNet [2][2]float64

func (w *toyNet) probs(x [2]float64) [2]float64 {
	var l [2]float64
	for a := range l {
		l[a] = w[a][0]*x[0] + w[a][1]*x[1]
	}
	m := max(l[0], l[1])
	e0, e1 := math.Exp(l[0]-m), math.Exp(l[1]-m)
	return [2]float64{e0 / (e0 + e1), e1 / (e0 + e1)}
}

// step moves W along the gradient of weight x log pi(action | x).
func (w *toyNet) step(x [2]float64, action int, weight, lr float64) {
	p := w.probs(x)
	for a := range w {
		g := -p[a]
		if a == action {
			g++
		}
		for i := range w[a] {
			w[a][i] += lr * weight * g * x[i]
		}
	}
}

func (w *toyNet) greedy(x [2]float64) int {
	if p := w.probs(x); p[1] > p[0] {
		return 1
	}
	return 0
}

// save writes W as the checkpoint's model.ot (a libtorch tensor) and the manifest.
func (w *toyNet) save(dir, parent string, metrics map[string]float64) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	flat := []float64{w[0][0], w[0][1], w[1][0], w[1][1]}
	if err := ts.SaveMultiNew([]ts.NamedTensor{{Name: "w", Tensor: ts.MustOfSlice(flat)}}, filepath.Join(dir, checkpoint.ModelFile)); err != nil {
		return err
	}
	_, err := checkpoint.Write(dir, checkpoint.Manifest{Model: "toy-linear-v1", Env: toyName, Parent: parent, Metrics: metrics})
	return err
}

func loadToyNet(dir string) (toyNet, string, error) {
	var w toyNet
	m, err := checkpoint.Read(dir)
	if err != nil {
		return w, "", err
	}
	named, err := ts.LoadMulti(filepath.Join(dir, checkpoint.ModelFile))
	if err != nil || len(named) != 1 {
		return w, "", fmt.Errorf("%s: want one tensor w: %v", dir, err)
	}
	v := named[0].Tensor.Float64Values()
	w = toyNet{{v[0], v[1]}, {v[2], v[3]}}
	return w, m.Digest(), nil
}

// accuracy is the share of n decisions of seed where the policy picks the larger number.
func toyAccuracy(pick func([2]float64) int, seed uint64, n int) float64 {
	right := 0
	for _, d := range toyDecisions(seed, n) {
		if pick(d.X) == d.Action {
			right++
		}
	}
	return 100 * float64(right) / float64(n)
}

// cloneToy fits W to the expert's choices (pretrain.epochs passes at pretrain.lr x 100).
func cloneToy(_ context.Context, cfg config.Config, _ pretrain.CloneOptions) (family.Summary, error) {
	data, err := os.ReadFile(filepath.Join(cfg.Pretrain.Dataset, "rows.json"))
	if err != nil {
		return family.Summary{}, err
	}
	var rows []toyDecision
	if err := json.Unmarshal(data, &rows); err != nil {
		return family.Summary{}, err
	}
	var w toyNet
	for range cfg.Pretrain.Epochs {
		for _, d := range rows {
			w.step(d.X, d.Action, 1, 100*cfg.Pretrain.LR)
		}
	}
	agree := toyAccuracy(w.greedy, 47, 200) / 100
	return family.Summary{Metric: "val_agreement", Value: agree}, w.save(cfg.Pretrain.Out, "", map[string]float64{"val_agreement": agree})
}

// fineTuneToy is REINFORCE from the clone: sampled choices, reward 1 for the larger number.
func fineTuneToy(_ context.Context, cfg config.Config, _ finetune.Options) (finetune.Result, error) {
	fc := cfg.Finetune
	w, parent, err := loadToyNet(fc.From)
	if err != nil {
		return finetune.Result{Dir: fc.Out}, err
	}
	start := toyAccuracy(w.greedy, 900, 200)
	rng := rand.New(rand.NewPCG(uint64(cfg.Seed), 0x66696e6574756e65))
	for _, d := range toyDecisions(1000, fc.TotalSteps) {
		p := w.probs(d.X)
		a := 0
		if rng.Float64() < p[1] {
			a = 1
		}
		reward := 0.0
		if a == d.Action {
			reward = 1
		}
		w.step(d.X, a, reward-0.5, fc.LR*100)
	}
	final := toyAccuracy(w.greedy, 900, 200)
	res := finetune.Result{Dir: fc.Out, EnvSteps: int64(fc.TotalSteps), Complete: true, StartMean: start, FinalMean: final,
		Summary: family.Summary{Metric: "heldout_accuracy_pct", Value: final, Note: fmt.Sprintf("held-out accuracy %.1f%% -> %.1f%%", start, final),
			Lines: []string{fmt.Sprintf("fine-tuned %s: held-out accuracy %.1f%% -> %.1f%%", fc.Out, start, final)}}}
	return res, w.save(fc.Out, parent, map[string]float64{"heldout_accuracy_pct": final})
}

// evaluateToy runs each eval policy (a checkpoint, or a heuristic: "first" always takes the
// first number, any other name the expert's rule) on eval.seeds and reports its accuracy in
// the arrival protocol's layout, as alloc_gpu_pct_130, the gate's measure.
func evaluateToy(_ context.Context, cfg config.Config, _ *slog.Logger) error {
	ec := cfg.Eval
	seeds, err := config.ParseSeeds(ec.Seeds)
	if err != nil {
		return fmt.Errorf("eval.seeds: %w", err)
	}
	names, err := eval.WorkloadNames(ec)
	if err != nil {
		return err
	}
	m := eval.Metrics{Schema: eval.SchemaVersion, Policies: ec.Policies, Traces: names, Seeds: seeds, Baseline: ec.Policies[0]}
	for _, p := range ec.Policies {
		pick := func(x [2]float64) int { return toyDecision{X: x}.larger() }
		if p == "first" {
			pick = func([2]float64) int { return 0 }
		}
		if dir, ok := strings.CutPrefix(p, "ckpt:"); ok {
			w, _, err := loadToyNet(dir)
			if err != nil {
				return fmt.Errorf("eval.policies: %s: %w", p, err)
			}
			pick = w.greedy
		}
		for _, trace := range names {
			r := eval.Result{Policy: p, Trace: trace, Seeds: seeds}
			var xs []float64
			for _, seed := range seeds {
				acc := toyAccuracy(pick, seed, 200)
				xs = append(xs, acc)
				r.PerSeed = append(r.PerSeed, eval.SeedRun{Seed: seed, AllocGPUPct130: acc})
			}
			r.AllocGPUPct130 = eval.Summarize(xs)
			m.Results = append(m.Results, r)
		}
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(ec.Out, 0o755); err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(ec.Out, "metrics.json"), append(data, '\n'), 0o644)
}

func (d toyDecision) larger() int {
	if d.X[1] > d.X[0] {
		return 1
	}
	return 0
}

// TestToyFamilyPipeline runs a family added in this file alone (a two-number world, a
// one-layer network) through logs -> datasets -> pretrain -> finetune -> eval -> publish with
// a file registry: the stages, pretrain, finetune and the commands find it through the
// registry, the clone and its fine-tune beat the "first" baseline, and the version is
// promoted.
func TestToyFamilyPipeline(t *testing.T) {
	root := t.TempDir()
	dir, store := filepath.Join(root, "pipeline"), "file://"+filepath.Join(root, "registry")
	env := []string{"SCHEDRL_REGISTRY_STORE=" + store, "SCHEDRL_REGISTRY_TRACKING_URI="}
	cmd := cliConfig(t, "configs/smoke.yaml", dir, env,
		"--set", "finetune.env="+toyName, "--set", "datasets.env="+toyName, "--set", "pipeline.model=toy-smoke",
		"--set", "eval.policies=first", "--set", "pipeline.gate.baselines=first", "--set", "finetune.total_steps=400")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("pipeline run: %v\n%s", err, out)
	}
	rec, err := pipeline.LoadRecord(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range rec.Stages {
		if s.Status != pipeline.StatusDone {
			t.Fatalf("stage %s %s, want done\n%s", s.Name, s.Status, out)
		}
	}
	if m := stageOf(t, rec, "datasets").Metric; m == nil || m.Value != 200 {
		t.Errorf("datasets stage metric %+v, want 200 rows (2 log seeds x 100)", m)
	}
	if m := stageOf(t, rec, "finetune").Metric; m == nil || m.Name != "heldout_accuracy_pct" || m.Value < 90 {
		t.Errorf("finetune stage metric %+v, want the toy's held-out accuracy >= 90%%", m)
	}
	pub := readPublished(t, rec)
	if pub.Ref != "toy-smoke@1" || !pub.Promoted {
		t.Fatalf("published %+v: want toy-smoke@1 promoted over the first-number baseline", pub)
	}
}
