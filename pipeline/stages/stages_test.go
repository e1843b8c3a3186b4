package stages

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedrl/schedrl/eval"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/internal/repotest"
	"github.com/schedrl/schedrl/pipeline"
)

func testConfig(t *testing.T) config.Config {
	t.Helper()
	cfg := config.Default()
	cfg.Sim.Nodes = repotest.OpenbNodes()
	cfg.Sim.Pods = repotest.OpenbPods("gpushare40")
	cfg.Pipeline.Dir = t.TempDir()
	cfg.Pipeline.Stages = []string{"logs", "datasets"}
	cfg.Pipeline.LogSeeds = "42-43"
	cfg.Datasets.ValFraction = 0.5
	cfg.Eval.TracesDir = repotest.OpenbDir()
	return cfg
}

func run(t *testing.T, cfg config.Config) *pipeline.Record {
	t.Helper()
	p, err := Build(cfg, Deps{})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := p.Run(context.Background(), pipeline.Options{
		Dir: cfg.Pipeline.Dir, CodeRevision: "test", Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func statuses(rec *pipeline.Record) string {
	var out []string
	for _, s := range rec.Stages {
		out = append(out, s.Name+"="+s.Status)
	}
	return strings.Join(out, ",")
}

// TestLogsAndDatasetsStages runs the real simulator and dataset builder through the pipeline.
func TestLogsAndDatasetsStages(t *testing.T) {
	cfg := testConfig(t)
	first := run(t, cfg)
	if got := statuses(first); got != "logs=done,datasets=done" {
		t.Fatalf("first run: %s", got)
	}
	logs, _ := filepath.Glob(filepath.Join(first.Stages[0].Output.Dir, "*.jsonl"))
	if len(logs) != 2 {
		t.Errorf("logs stage wrote %v, want one log per seed", logs)
	}
	if _, err := os.Stat(filepath.Join(first.Stages[1].Output.Dir, "manifest.json")); err != nil {
		t.Errorf("datasets output: %v", err)
	}
	if m := first.Stages[1].Metric; m == nil || m.Name != "rows" || m.Value < 1000 {
		t.Errorf("datasets metric %+v", m)
	}

	given := t.TempDir()
	for _, l := range logs {
		data, err := os.ReadFile(l)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(given, filepath.Base(l)), data, 0o644)
	}
	tests := []struct {
		name   string
		change func(*config.Config)
		want   string
	}{
		{"unchanged", func(*config.Config) {}, "logs=cached,datasets=cached"},
		{"datasets config", func(c *config.Config) { c.Datasets.ValFraction = 0 }, "logs=cached,datasets=done"},
		{"worker count is not in the key", func(c *config.Config) { c.Datasets.Workers = 1 }, "logs=cached,datasets=cached"},
		// The same logs given instead of simulated: the logs stage reruns (copies them), and its
		// output has the same content, so the dataset is reused.
		{"given logs with the same content", func(c *config.Config) { c.Datasets.Logs = filepath.Join(given, "*.jsonl") }, "logs=done,datasets=cached"},
		{"more seeds", func(c *config.Config) { c.Pipeline.LogSeeds = "42-44" }, "logs=done,datasets=done"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := cfg
			tc.change(&c)
			if got := statuses(run(t, c)); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestBuildRejectsBadReferences(t *testing.T) {
	cfg := testConfig(t)
	// Every stage is built: the training and eval stages read their reference files.
	cfg.Finetune.Nodes, cfg.Finetune.TracesDir = repotest.OpenbNodes(), repotest.OpenbDir()
	cfg.Eval.Nodes, cfg.Eval.Paper = repotest.OpenbNodes(), repotest.PaperTable()
	tests := []struct {
		name   string
		change func(*config.Config)
		want   string
	}{
		{"unknown expert", func(c *config.Config) { c.Sim.Policy = "fgdd" }, `sim.policy: unknown placement policy "fgdd"`},
		{"missing trace", func(c *config.Config) { c.Sim.Pods = "nope.csv" }, "sim.pods: open nope.csv"},
		{"given logs match nothing", func(c *config.Config) { c.Datasets.Logs = "/nonexistent/*.jsonl" }, "matches no file"},
		{"stage list", func(c *config.Config) { c.Pipeline.Stages = []string{"datasets"} }, `"datasets" reads "logs"`},
		{"gate workload not evaluated", func(c *config.Config) {
			c.Pipeline.Stages = config.PipelineStages
			c.Pipeline.Gate.Workloads = []string{"gpushare80"}
		},
			`pipeline.gate.workloads[0]: "gpushare80" is not one of eval.traces`},
		{"timed gate metric, arrival eval", func(c *config.Config) {
			c.Pipeline.Stages = config.PipelineStages
			c.Pipeline.Gate.Metric = "avg_jct_s"
		},
			"pipeline.gate.metric: avg_jct_s is a timed evaluation's measure, and eval.timed.kind is not set"},
		{"timed gate metric among metrics, arrival eval", func(c *config.Config) {
			c.Pipeline.Stages = config.PipelineStages
			c.Pipeline.Gate.Metrics = []string{"alloc_gpu_pct_130", "makespan_s"}
		},
			"pipeline.gate.metrics: makespan_s is a timed evaluation's measure, and eval.timed.kind is not set"},
		{"arrival gate metric, timed eval", func(c *config.Config) {
			c.Pipeline.Stages = config.PipelineStages
			c.Eval.Timed.Kind = "tasks"
		},
			`pipeline.gate.metric: alloc_gpu_pct_130 is the arrival protocol's measure, and eval.timed.kind is "tasks"`},
		{"no expert logs for the environment", func(c *config.Config) { c.Finetune.Env = "defrag" },
			`finetune.env: "defrag": the logs stage makes expert logs for [defrag-online drr maifs placement] only`},
		{"gate baseline not evaluated", func(c *config.Config) {
			c.Pipeline.Stages = config.PipelineStages
			c.Eval.Policies = []string{"bestfit"}
		},
			`pipeline.gate.baselines[0]: "fgd" is not one of eval.policies [bestfit]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := cfg
			tc.change(&c)
			if _, err := Build(c, Deps{ResolvePolicy: eval.Heuristics, Pretrain: notRun, Finetune: notRun}); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// notRun stands in for a training stage that Build constructs but no test runs.
func notRun(context.Context, config.Config, pipeline.Env) (pipeline.Result, error) {
	return pipeline.Result{}, errors.New("not run in this test")
}
