package stages

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/schedrl/schedrl/eval"
	"github.com/schedrl/schedrl/fungible"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/internal/repotest"
	"github.com/schedrl/schedrl/pipeline"
)

// maifsConfig is a MAIFS pipeline's config (configs/maifs-smoke.yaml's shape) on the
// repository's tables.
func maifsConfig(t *testing.T) config.Config {
	t.Helper()
	cfg := config.Default()
	cfg.Pipeline.Dir = filepath.Join(t.TempDir(), "pipeline")
	cfg.Pipeline.Model = "maifs"
	cfg.Pipeline.Gate = config.GateConfig{Alias: "champion", Metric: "alloc_gpu_pct_130", Metrics: []string{"avg_jct_s", "makespan_s"}, Paired: true,
		Workloads: []string{"jobs=30,lam=400,multigpu"}, Baselines: []string{"synergy-tune/srtf"}}
	m := &cfg.MAIFS
	m.Cluster, m.Generate, m.Seeds, m.ValSeeds, m.Every = "8:8:8", []string{"jobs=30,lam=400,multigpu"}, "1000", "900", 2
	m.PPOGenerate, m.PPOSeeds, m.HeldOut = []string{"jobs=20,lam=400,multigpu"}, "2000-2003", "49-50"
	m.Throughputs, m.Profiles = repotest.Data("gavel", "simulation_throughputs.json"), repotest.Data("synergy", "profiles.json")
	m.Mapping = repotest.Data("fungible", "gavel_synergy_models.csv")
	cfg.Datasets.Env, cfg.Finetune.Env = "maifs", "maifs"
	cfg.Finetune.Nodes, cfg.Finetune.TracesDir = repotest.OpenbNodes(), repotest.OpenbDir()
	e := &cfg.Eval
	e.Policies, e.Traces, e.Seeds, e.Baseline = []string{"srtf", "synergy-tune/srtf"}, []string{"jobs=30,lam=400,multigpu"}, "49-50", "synergy-tune/srtf"
	e.Timed.Kind, e.Timed.Cluster, e.Timed.ServersGPUs = "fungible", "8:8:8", "8"
	e.Timed.Throughputs, e.Timed.Profiles, e.Timed.SynergyMap = m.Throughputs, m.Profiles, m.Mapping
	cfg.Registry.Store = "file://" + filepath.Join(t.TempDir(), "registry")
	return cfg
}

// Bad input to the MAIFS pipeline is refused when it is built, before any stage runs, naming
// the key; the pipeline directory stays empty.
func TestMAIFSPipelineRefusesBadInput(t *testing.T) {
	deps := Deps{ResolvePolicy: eval.Heuristics, Pretrain: notRun, Finetune: notRun}
	if _, err := Build(maifsConfig(t), deps); err != nil {
		t.Fatalf("the good config: %v", err)
	}
	for _, c := range []struct {
		key string
		set func(*config.Config)
	}{
		{"maifs.every", func(c *config.Config) { c.MAIFS.Every = 0 }},
		{"maifs.expert", func(c *config.Config) { c.MAIFS.Expert = "tune" }},
		{"maifs.order", func(c *config.Config) { c.MAIFS.Order = "lifo" }},
		{"maifs.generate[0]", func(c *config.Config) { c.MAIFS.Generate = []string{"jobs=10"} }},
		{"maifs.val_seeds: seed 49 is also in held_out_seeds", func(c *config.Config) { c.MAIFS.ValSeeds = "49" }},
		{"maifs.throughputs", func(c *config.Config) { c.MAIFS.Throughputs = "no/such.json" }},
		{"datasets.env", func(c *config.Config) { c.Datasets.Env = "placement" }},
		{"eval.timed.kind", func(c *config.Config) { c.Eval.Timed.Kind = "jobs" }},
		{"eval.timed.cluster", func(c *config.Config) { c.Eval.Timed.Cluster = "36:36:36" }},
		{"eval.timed.servers_gpus", func(c *config.Config) { c.Eval.Timed.ServersGPUs = "4" }},
		{"eval.seeds: 1000 is also in maifs.seeds", func(c *config.Config) { c.Eval.Seeds = "49,1000" }},
		{"pipeline.gate.metrics[1]", func(c *config.Config) { c.Pipeline.Gate.Metrics = []string{"avg_jct_s", "jct"} }},
		{"pipeline.gate.metrics: alloc_gpu_pct_130", func(c *config.Config) { c.Pipeline.Gate.Metrics = []string{"avg_jct_s", "alloc_gpu_pct_130"} }},
		{"pipeline.gate.baselines[0]", func(c *config.Config) { c.Pipeline.Gate.Baselines = []string{"gandiva"} }},
	} {
		cfg := maifsConfig(t)
		c.set(&cfg)
		_, err := Build(cfg, deps)
		if err == nil || !strings.Contains(err.Error(), c.key) {
			t.Errorf("%s: err = %v, want one naming it", c.key, err)
		}
		if entries, _ := os.ReadDir(cfg.Pipeline.Dir); len(entries) > 0 {
			t.Errorf("%s: the refused pipeline wrote %d entries in %s", c.key, len(entries), cfg.Pipeline.Dir)
		}
	}
}

type noProgress struct{}

func (noProgress) Start(int64, string) {}
func (noProgress) Add(int64)           {}

// The logs' names sort in the config's order (maifs.generate, then maifs.seeds and
// maifs.val_seeds), the order maifs-bc records its expert in, even where the specs' own names
// sort the other way (lam=900 after lam=1500).
func TestMAIFSLogsSortInConfigOrder(t *testing.T) {
	cfg := maifsConfig(t)
	cfg.MAIFS.Generate, cfg.MAIFS.Seeds, cfg.MAIFS.ValSeeds = []string{"jobs=6,lam=900", "jobs=6,lam=1500"}, "1000-1001", "900"
	stage, err := newMAIFSLogs(cfg)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if _, err := stage.Run(context.Background(), pipeline.Env{OutDir: out, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Progress: noProgress{}}); err != nil {
		t.Fatal(err)
	}
	names, err := filepath.Glob(filepath.Join(out, "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	var got []string
	for _, name := range names {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		lg, err := fungible.ReadLog(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s/%d", lg.Header.Workload, lg.Header.Seed))
	}
	want := []string{"jobs=6,lam=900/1000", "jobs=6,lam=900/1001", "jobs=6,lam=900/900", "jobs=6,lam=1500/1000", "jobs=6,lam=1500/1001", "jobs=6,lam=1500/900"}
	if !slices.Equal(got, want) {
		t.Fatalf("logs in name order %v, want %v", got, want)
	}
}

// The maifs expert's runs in two shards, as pods make them (each log stored by sha256), merge
// into the local executor's logs byte for byte, and a pod's flags give it the same key.
func TestMAIFSLogsShardsMergeToTheLocalLogs(t *testing.T) {
	cfg := maifsConfig(t)
	cfg.Pipeline.Stages = []string{"logs"}
	cfg.MAIFS.Seeds = "1000-1001"
	s, _ := shardsMergeToLocal(t, cfg, 3)
	if got := s.m.units(); len(got) != 3 || got[2] != "002-jobs-30_lam-400_multigpu-seed900" {
		t.Errorf("units %q", got)
	}
}
