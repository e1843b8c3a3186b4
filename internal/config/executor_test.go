package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A bad executor key is named in full when the config loads, before any work.
func TestExecutorBadKeysNamed(t *testing.T) {
	for yaml, want := range map[string]string{
		"kind: slurm":                "pipeline.executor.kind",
		"kind: kubernetes":           "pipeline.executor.image",
		"parallelism: 0":             "pipeline.executor.parallelism",
		"resources: {memory: lots}":  "pipeline.executor.resources.memory",
		"resources: {gpu: -1}":       "pipeline.executor.resources.gpu",
		"namespace: Not_A_Namespace": "pipeline.executor.namespace",
		"timeout: 0s":                "pipeline.executor.timeout",
		"paralelism: 4":              "pipeline.executor.paralelism",
		"kind: kubernetes\n    image: x:y\n    secret: 'a b'": "pipeline.executor.secret",
	} {
		path := filepath.Join(t.TempDir(), "c.yaml")
		if err := os.WriteFile(path, []byte("pipeline:\n  executor:\n    "+yaml+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, err := Load(path, nil)
		if err == nil {
			err = cfg.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err %v, want it to name %s", yaml, err, want)
		}
	}
	c := Default().Pipeline.Executor
	if c.Kind != "local" || c.ShardCount(72) != 8 || c.ShardCount(3) != 3 {
		t.Errorf("defaults: %+v, %d shards of 72 cells", c, c.ShardCount(72))
	}
}
