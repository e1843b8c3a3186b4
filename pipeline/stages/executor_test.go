package stages

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/schedrl/schedrl/eval"
	"github.com/schedrl/schedrl/family"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/internal/repotest"
	"github.com/schedrl/schedrl/pipeline"
)

// Where work runs is no input of a stage: the executor's settings, its kind included, leave
// every key as it is, and the stages that do not shard refuse the kubernetes executor by key
// instead of ignoring it.
func TestStageKeysIgnoreTheExecutor(t *testing.T) {
	keys := func(t *testing.T, p *pipeline.Pipeline, dir string) []string {
		t.Helper()
		plan, err := p.Plan(pipeline.Options{Dir: dir, CodeRevision: "test"})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range plan {
			out = append(out, e.Stage+"="+e.Key)
		}
		return out
	}
	cfg := testConfig(t)
	p, err := Build(cfg, Deps{})
	if err != nil {
		t.Fatal(err)
	}
	want := keys(t, p, cfg.Pipeline.Dir)
	other := cfg
	x := &other.Pipeline.Executor
	x.Namespace, x.Image, x.Parallelism, x.Shards, x.Retries, x.HostNetwork = "batch", "registry.example/schedrl:v2", 16, 64, 5, true
	x.Resources.CPU, x.Resources.Memory, x.Resources.GPU = "4", "16Gi", 1
	p, err = Build(other, Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if got := keys(t, p, cfg.Pipeline.Dir); !slices.Equal(got, want) || len(want) != 2 || strings.HasSuffix(want[0], "=") {
		t.Errorf("keys with another executor setup %v, want %v", got, want)
	}
	x.Kind = "kubernetes"
	p, err = Build(other, Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if got := keys(t, p, cfg.Pipeline.Dir); !slices.Equal(got, want) {
		t.Errorf("keys with the kubernetes executor %v, want %v", got, want)
	}
	// Nor does a published version's lineage.
	a, errA := configHash(cfg)
	b, errB := configHash(other)
	if errA != nil || errB != nil || a != b {
		t.Errorf("config hash %s with the kubernetes executor, %s with the local one (%v, %v)", b, a, errB, errA)
	}
	// The eval stage shards the arrival protocol; a timed world stays local.
	other.Pipeline.Stages = append(other.Pipeline.Stages, "pretrain", "finetune", "eval")
	other.Registry.Store = "file://" + t.TempDir()
	other.Finetune.Nodes, other.Finetune.TracesDir, other.Eval.Nodes = repotest.OpenbNodes(), repotest.OpenbDir(), repotest.OpenbNodes()
	other.Eval.PaperOverlay = false
	deps := Deps{ResolvePolicy: eval.Heuristics, Pretrain: notRun, Finetune: notRun}
	if _, err := Build(other, deps); err != nil {
		t.Errorf("the eval stage refused the kubernetes executor: %v", err)
	}
	timed := other
	timed.Eval.Timed.Kind = "tasks"
	if _, err := Build(timed, deps); err == nil || !strings.Contains(err.Error(), "pipeline.executor.kind") {
		t.Errorf("a timed eval stage took the kubernetes executor: %v", err)
	}
	// Every family's expert logs shard.
	for _, fam := range []config.Config{maifsConfig(t), onlineConfig(t)} {
		fam.Pipeline.Stages, fam.Pipeline.Executor = []string{"logs"}, other.Pipeline.Executor
		if _, err := Build(fam, Deps{}); err != nil {
			t.Errorf("the %s logs stage refused the kubernetes executor: %v", fam.Finetune.Env, err)
		}
	}
}

// The pods' side of the logs stage, without a cluster: shards made in temporary folders and
// stored by sha256 merge into exactly the logs the local executor writes, and a part that
// is not what this config would make is refused by what is wrong with it.
func TestExpertLogsShardsMergeToTheLocalLogs(t *testing.T) {
	cfg := testConfig(t)
	cfg.Pipeline.Stages = []string{"logs"}
	cfg.Pipeline.LogSeeds = "42-44"
	s, parts := shardsMergeToLocal(t, cfg, 3)
	ctx := context.Background()
	// Merged blobs are deleted; so a second merge of the same parts finds none.
	if _, err := s.merge(ctx, parts, t.TempDir(), slog.Default()); err == nil || !strings.Contains(err.Error(), "seed42") {
		t.Errorf("merge after the blobs were deleted: %v", err)
	}
	renamed := bytes.Replace(parts[0], []byte(`-seed42.jsonl"`), []byte(`-seed44.jsonl"`), 1)
	for _, c := range []struct {
		name  string
		parts [][]byte
		want  string
	}{
		{"shards swapped", [][]byte{parts[1], parts[0]}, "made for shard 1/2"},
		{"a shard missing", parts[:1], "made for shard 0/2"},
		{"other traces", [][]byte{bytes.Replace(parts[0], []byte(`"sha256":"`), []byte(`"sha256":"0`), 1), parts[1]}, "input files"},
		{"a log of another unit", [][]byte{renamed, parts[1]}, "not named for it"},
		{"not a part", [][]byte{[]byte(`{"schema":"x","extra":1}`), parts[1]}, "unknown field"},
	} {
		if _, err := s.merge(ctx, c.parts, t.TempDir(), slog.Default()); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want %q", c.name, err, c.want)
		}
	}
}

// shardsMergeToLocal runs cfg's logs stage with the local executor, then makes its logs in two
// shards as pods do (each log stored by sha256 in a file:// store) and merges the parts: the
// merged folder must hold the local logs byte for byte, at least atLeast of them. It returns the
// stage and the parts, whose blobs the merge deleted.
func shardsMergeToLocal(t *testing.T, cfg config.Config, atLeast int) (*shardedLogs, [][]byte) {
	t.Helper()
	cfg.Registry.Store = "file://" + t.TempDir()
	local := run(t, cfg).Stages[0].Output.Dir
	s := podStage(t, cfg)
	ctx := context.Background()
	parts := make([][]byte, 2)
	var err error
	for i := range parts {
		if parts[i], err = ExpertLogsShard(ctx, cfg, eval.Shard{Index: i, Count: 2}, "parts/test", slog.Default()); err != nil {
			t.Fatal(err)
		}
	}
	merged := t.TempDir()
	count, err := s.merge(ctx, parts, merged, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	names, _ := filepath.Glob(filepath.Join(local, "*.jsonl"))
	got, _ := filepath.Glob(filepath.Join(merged, "*.jsonl"))
	if len(names) < atLeast || len(got) != len(names) || count == 0 {
		t.Fatalf("local logs %v, merged %v, count %d", names, got, count)
	}
	for _, n := range names {
		a, _ := os.ReadFile(n)
		b, err := os.ReadFile(filepath.Join(merged, filepath.Base(n)))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("%s: the merged log differs from the local one (%v)", filepath.Base(n), err)
		}
	}
	return s, parts
}

// podStage builds cfg's logs stage from its pod command's flags alone, as `schedrl logs
// expert` does, and checks that it has the driver's key.
func podStage(t *testing.T, cfg config.Config) *shardedLogs {
	t.Helper()
	f, _ := family.Get(cfg.Finetune.Env)
	st, err := f.ExpertLogs(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := st.(*shardedLogs)
	if !slices.Equal(s.args[:2], []string{"logs", "expert"}) {
		t.Fatalf("pod args %q", s.args)
	}
	flags := pflag.NewFlagSet("logs expert", pflag.ContinueOnError)
	config.AddFlags(flags, "")
	if err := flags.Parse(s.args[2:]); err != nil {
		t.Fatal(err)
	}
	podCfg, err := config.Load("", flags)
	if err != nil {
		t.Fatal(err)
	}
	podCfg.Registry = cfg.Registry // pods read the store's settings from their secret
	f, _ = family.Get(podCfg.Finetune.Env)
	pod, err := f.ExpertLogs(podCfg)
	if err != nil {
		t.Fatalf("pod args %q: %v", s.args, err)
	}
	if !reflect.DeepEqual(pod.Config(), s.Config()) {
		t.Errorf("pod args %q\ngive %+v\nwant %+v", s.args, pod.Config(), s.Config())
	}
	return s
}

// A logs pod's command gives it the driver's expert logs: the same key (sim section, seeds,
// trace contents) from the flags alone.
func TestExpertLogsShardArgsRoundTrip(t *testing.T) {
	cfg := testConfig(t)
	cfg.Pipeline.LogSeeds = "42-44,50"
	cfg.Sim.Policy, cfg.Sim.Tune, cfg.Sim.Coverage = "bestfit", 1.25, 0.9
	podStage(t, cfg)
}
