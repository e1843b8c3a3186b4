package stages

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedrl/schedrl/defrag/online"
	"github.com/schedrl/schedrl/eval"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/internal/repotest"
)

// onlineConfig is a defrag-online pipeline's config on the repository's openb files.
func onlineConfig(t *testing.T) config.Config {
	t.Helper()
	cfg := config.Default()
	cfg.Pipeline.Dir = filepath.Join(t.TempDir(), "pipeline")
	cfg.Pipeline.LogSeeds = "1000"
	cfg.Pipeline.Stages = []string{"logs", "datasets", "pretrain", "finetune", "eval"}
	cfg.Pipeline.Gate.Metric = "queue_delay_whole-gpu_mean_s"
	cfg.Pipeline.Gate.Baselines = []string{"greedy"}
	cfg.Datasets.Env = "defrag"
	cfg.Finetune.Env = online.EnvName
	cfg.Finetune.Nodes, cfg.Finetune.TracesDir = repotest.OpenbNodes(), repotest.OpenbDir()
	cfg.DefragOnline.Expert = "greedy"
	cfg.Eval.Nodes, cfg.Eval.TracesDir = repotest.OpenbNodes(), repotest.OpenbDir()
	cfg.Eval.Policies, cfg.Eval.PaperOverlay = []string{"none", "greedy"}, false
	cfg.Eval.Timed.Kind = online.EnvName
	cfg.Registry.Store = "file://" + filepath.Join(t.TempDir(), "registry")
	return cfg
}

// A trigger, budget or load out of range is refused when the pipeline is built, before any
// stage runs, naming the key; the pipeline directory stays empty.
func TestDefragOnlinePipelineRefusesBadInput(t *testing.T) {
	deps := Deps{ResolvePolicy: eval.Heuristics, Pretrain: notRun, Finetune: notRun}
	if _, err := Build(onlineConfig(t), deps); err != nil {
		t.Fatalf("the good config: %v", err)
	}
	for _, c := range []struct {
		key string
		set func(*config.Config)
	}{
		{"defrag_online.every_s", func(c *config.Config) { c.DefragOnline.Every = 0 }},
		{"defrag_online.head_wait_s", func(c *config.Config) { c.DefragOnline.HeadWait = -1 }},
		{"defrag_online.budget", func(c *config.Config) { c.DefragOnline.Budget = 0 }},
		{"defrag_online.cap_per_hour", func(c *config.Config) { c.DefragOnline.CapPerHour = 0 }},
		{"defrag_online.downtime_per_gpu_s", func(c *config.Config) { c.DefragOnline.DowntimePerGPU = -5 }},
		{"defrag_online.loads[1]", func(c *config.Config) { c.DefragOnline.Loads = []float64{1.0, 0} }},
		{"defrag_online.expert", func(c *config.Config) { c.DefragOnline.Expert = "no-such-method" }},
		{"pipeline.log_seeds", func(c *config.Config) { c.Pipeline.LogSeeds = "101" }}, // a held-out timeline
		{"timed.load", func(c *config.Config) { c.Eval.Timed.Load = 0 }},
		{"timed.load", func(c *config.Config) { c.Eval.Timed.Load = 11 }},
	} {
		cfg := onlineConfig(t)
		c.set(&cfg)
		_, err := Build(cfg, deps)
		if err == nil || !strings.Contains(err.Error(), c.key) {
			t.Errorf("%s out of range: err = %v, want one naming %s", c.key, err, c.key)
		}
		if entries, _ := os.ReadDir(cfg.Pipeline.Dir); len(entries) > 0 {
			t.Errorf("%s: the refused pipeline wrote %d entries in %s", c.key, len(entries), cfg.Pipeline.Dir)
		}
	}
}

// The online demonstrations in two shards, as pods make them (each log stored by sha256),
// merge into the local executor's logs byte for byte, and a pod's flags give it the same key.
func TestOnlineDemosShardsMergeToTheLocalLogs(t *testing.T) {
	cfg := onlineConfig(t)
	cfg.Pipeline.Stages = []string{"logs"}
	cfg.Pipeline.LogSeeds = "1000-1001"
	o := &cfg.DefragOnline // configs/defrag-online-smoke.yaml's short timelines
	o.Loads, o.Duration, o.Warmup, o.Cap, o.Every, o.HeadWait = []float64{1.1}, 7200, 1800, 3600, 300, 60
	s, _ := shardsMergeToLocal(t, cfg, 2)
	if got := s.m.units(); len(got) != 2 || got[0] != "default-load1.1-seed1000" {
		t.Errorf("units %q", got)
	}
}
