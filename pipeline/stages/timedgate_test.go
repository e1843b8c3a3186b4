package stages

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedrl/schedrl/eval"
	"github.com/schedrl/schedrl/internal/checkpoint"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/internal/repotest"
	"github.com/schedrl/schedrl/pipeline"
	"github.com/schedrl/schedrl/registry"
)

// TestPublishGateOnATimedEval gates on a real timed evaluation (Gavel's DL jobs) with a
// lower-is-better metric: SRTF, whose mean JCT is below FIFO's on every seed when jobs queue,
// takes the alias against FIFO; FIFO does not against SRTF. The version's manifest keeps the
// candidate's timed means under names a metric store takes.
func TestPublishGateOnATimedEval(t *testing.T) {
	cfg := testConfig(t)
	cfg.Registry.Store = "file://" + t.TempDir()
	cfg.Eval.Timed.Kind = "jobs"
	cfg.Eval.Timed.Cluster = "8:8:8"
	cfg.Eval.Timed.Throughputs = repotest.Data("gavel", "simulation_throughputs.json")
	cfg.Eval.Timed.Profiles = repotest.Data("synergy", "profiles.json")
	cfg.Eval.Timed.SynergyMap = repotest.Data("fungible", "gavel_synergy_models.csv")
	cfg.Eval.Traces = []string{"jobs=40,lam=300,multigpu"}
	cfg.Eval.Policies = []string{"fifo", "srtf"}
	cfg.Eval.Seeds = "1-4"
	cfg.Eval.Out = filepath.Join(t.TempDir(), "eval")
	cfg.Pipeline.Gate = config.GateConfig{Alias: "champion", Metric: "avg_jct_s", Paired: true,
		Workloads: []string{"jobs=40,lam=300,multigpu"}}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	if _, err := eval.RunTimed(context.Background(), cfg.Eval, eval.Options{Log: quiet}); err != nil {
		t.Fatal(err)
	}
	reg, err := registry.Open(cfg.Registry, quiet)
	if err != nil {
		t.Fatal(err)
	}
	publish := func(candidate, baseline string) Published {
		t.Helper()
		c := cfg
		c.Pipeline.Gate.Baselines = []string{baseline}
		stage, err := newPublish(c, reg)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(cfg.Eval.Out, evalPoliciesFile),
			[]byte(`{"candidate":"`+candidate+`","pretrained":"fifo"}`), 0o644); err != nil {
			t.Fatal(err)
		}
		ckpt := t.TempDir()
		if err := os.WriteFile(filepath.Join(ckpt, checkpoint.ModelFile), []byte(candidate), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := checkpoint.Write(ckpt, checkpoint.Manifest{Model: "test-net", Env: "maifs"}); err != nil {
			t.Fatal(err)
		}
		out := t.TempDir()
		if _, err := stage.Run(context.Background(), pipeline.Env{
			Inputs: map[string]pipeline.Output{"finetune": {Dir: ckpt}, "eval": {Dir: cfg.Eval.Out}},
			OutDir: out, Log: quiet,
		}); err != nil {
			t.Fatal(err)
		}
		v, err := reg.Resolve(context.Background(), "placement@latest")
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := v.Manifest.Metrics["eval_avg_jct_s_jobs_40_lam_300_multigpu"]; !ok {
			t.Errorf("version metrics %v lack the timed mean", v.Manifest.Metrics)
		}
		var p Published
		data, err := os.ReadFile(filepath.Join(out, "publish.json"))
		if err == nil {
			err = json.Unmarshal(data, &p)
		}
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	if p := publish("fifo", "srtf"); p.Promoted || !strings.Contains(p.Decision.Reason, "the gain's 95% interval starts at -") {
		t.Errorf("fifo against srtf: %+v", p.Decision)
	}
	if p := publish("srtf", "fifo"); !p.Promoted || !strings.Contains(p.Decision.Reason, "avg_jct_s (lower is better)") {
		t.Errorf("srtf against fifo: %+v", p.Decision)
	}
}
