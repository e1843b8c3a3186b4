package stages

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedrl/schedrl/defrag/online"
	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/eval"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/internal/repotest"
	"github.com/schedrl/schedrl/pipeline"
	"github.com/schedrl/schedrl/sim"
)

// drrConfig is a drr pipeline's config on the repository's openb files: 1 h timelines on
// 16-node sub-clusters.
func drrConfig(t *testing.T) config.Config {
	t.Helper()
	cfg := config.Default()
	cfg.Pipeline.Dir = filepath.Join(t.TempDir(), "pipeline")
	cfg.Pipeline.LogSeeds = "1001-1002"
	cfg.Pipeline.Stages = []string{"logs", "datasets", "pretrain", "finetune", "eval"}
	cfg.Pipeline.Gate.Metrics, cfg.Pipeline.Gate.Paired = []string{"frag_ratio_mean_pct"}, true
	cfg.Pipeline.Gate.Guardrails = []string{"queue_delay_gpu_mean_s:30"}
	cfg.Datasets.Env, cfg.Finetune.Env = env.PlacementName, online.DRREnvName
	cfg.Finetune.Nodes, cfg.Finetune.TracesDir = repotest.OpenbNodes(), repotest.OpenbDir()
	cfg.Finetune.Traces, cfg.Finetune.ClusterSizes = []string{"default"}, []int{16}
	cfg.DefragOnline.Loads, cfg.DefragOnline.Duration, cfg.DefragOnline.Warmup, cfg.DefragOnline.Cap = []float64{0.7}, 3600, 1800, 1800
	cfg.Eval.Nodes, cfg.Eval.TracesDir = repotest.OpenbNodes(), repotest.OpenbDir()
	cfg.Eval.Policies, cfg.Eval.PaperOverlay, cfg.Eval.Seeds = []string{"fgd"}, false, "101-102"
	cfg.Eval.Timed.Kind, cfg.Eval.Timed.Load, cfg.Eval.Timed.SampleNodes = online.DRREnvName, 0.7, 16
	cfg.Registry.Store = "file://" + filepath.Join(t.TempDir(), "registry")
	return cfg
}

// A drr pipeline whose stages would not fit together is refused when it is built, before any
// stage runs, naming the key; the pipeline directory stays empty.
func TestDRRPipelineRefusesBadInput(t *testing.T) {
	deps := Deps{ResolvePolicy: eval.Heuristics, Pretrain: notRun, Finetune: notRun}
	if _, err := Build(drrConfig(t), deps); err != nil {
		t.Fatalf("the good config: %v", err)
	}
	for _, c := range []struct {
		key string
		set func(*config.Config)
	}{
		{"datasets.env", func(c *config.Config) { c.Datasets.Env = env.DefragName }},
		{"eval.timed.kind", func(c *config.Config) { c.Eval.Timed.Kind = "tasks" }},
		{"eval.seeds: 900 is not a held-out timeline", func(c *config.Config) { c.Eval.Seeds = "101,900" }},
		{"pipeline.log_seeds: 101 is a held-out timeline", func(c *config.Config) { c.Pipeline.LogSeeds = "101" }},
		{"sim.policy", func(c *config.Config) { c.Sim.Policy = "no-such-placer" }},
		{"pipeline.executor.kind: \"kubernetes\": the drr expert logs", func(c *config.Config) {
			c.Pipeline.Executor.Kind, c.Pipeline.Executor.Image = "kubernetes", "registry.example/schedrl:v2"
		}},
		{"defrag_online.warmup_s", func(c *config.Config) { c.DefragOnline.Warmup = 7200 }},
		{"timed.load", func(c *config.Config) { c.Eval.Timed.Load = 0 }},
		{"gate.guardrails[0]", func(c *config.Config) { c.Pipeline.Gate.Guardrails = []string{"queue_delay_gpu_mean_s"} }},
		{"pipeline.gate.guardrails[1]: alloc_gpu_pct_130 is the arrival protocol's measure", func(c *config.Config) {
			c.Pipeline.Stages = append(c.Pipeline.Stages, "publish")
			c.Pipeline.Gate.Guardrails = []string{"queue_delay_gpu_mean_s:30", "alloc_gpu_pct_130:1"}
		}},
	} {
		cfg := drrConfig(t)
		c.set(&cfg)
		_, err := Build(cfg, deps)
		if err == nil || !strings.Contains(err.Error(), c.key) {
			t.Errorf("err = %v, want one naming %s", err, c.key)
		}
		if entries, _ := os.ReadDir(cfg.Pipeline.Dir); len(entries) > 0 {
			t.Errorf("%s: the refused pipeline wrote %d entries in %s", c.key, len(entries), cfg.Pipeline.Dir)
		}
	}
}

// The drr logs stage writes one version-2 timed log per pod list, cluster size, load and seed,
// each on the seed's sub-cluster with FGD's policy in its header; a changed timeline changes
// its key.
func TestDRRLogs(t *testing.T) {
	cfg := drrConfig(t)
	stage, err := newDRRLogs(cfg)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	res, err := stage.Run(context.Background(), pipeline.Env{OutDir: out, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Progress: noProgress{}})
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(out, "*.jsonl"))
	if len(files) != 2 || res.Metric == nil || res.Metric.Name != "starts" || res.Metric.Value == 0 {
		t.Fatalf("logs %v, metric %+v: want 2 logs and FGD's starts", files, res.Metric)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		first, _, _ := bytes.Cut(data, []byte("\n"))
		var h sim.LogHeader
		if err := json.Unmarshal(first, &h); err != nil {
			t.Fatal(err)
		}
		if h.Version != sim.LogVersionTimed || len(h.Nodes) != 16 || h.Meta["policy"] != "fgd" {
			t.Errorf("%s: header version %d, %d nodes, policy %q", f, h.Version, len(h.Nodes), h.Meta["policy"])
		}
	}
	longer := drrConfig(t)
	longer.DefragOnline.Duration = 7200
	other, err := newDRRLogs(longer)
	if err != nil {
		t.Fatal(err)
	}
	k1, _ := json.Marshal(stage.Config())
	if k2, _ := json.Marshal(other.Config()); bytes.Equal(k1, k2) {
		t.Error("a longer timeline kept the logs' key")
	}
}
