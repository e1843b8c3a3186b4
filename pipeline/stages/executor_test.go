package stages

import (
	"slices"
	"strings"
	"testing"

	"github.com/schedrl/schedrl/pipeline"
)

// Where work runs is no input of a stage: the executor's settings leave every key as it is,
// and the stages that do not shard refuse the kubernetes executor by key instead of ignoring it.
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
	if _, err := Build(other, Deps{}); err == nil || !strings.Contains(err.Error(), "pipeline.executor.kind") {
		t.Errorf("the logs stage took the kubernetes executor: %v", err)
	}
}
