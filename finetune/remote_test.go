package finetune

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedrl/schedrl/internal/checkpoint"
	"github.com/schedrl/schedrl/internal/config"
)

// With rollout workers (the local executor: goroutines meeting through a folder store), the
// same seed and worker count give the same checkpoint bytes, run straight or stopped after
// two updates and resumed; the run's store is removed at the end; a resume with another
// worker count is refused by key.
func TestRolloutWorkersGiveTheSameBytes(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	from := pretrained(t)
	configOf := func(out string, workers int) config.Config {
		cfg := smallConfig(t, from, filepath.Join(t.TempDir(), out))
		cfg.Finetune.TotalSteps = 4 * 3 * 16
		cfg.Finetune.RolloutWorkers = workers
		return cfg
	}
	model := func(cfg config.Config) []byte {
		t.Helper()
		res, err := Run(context.Background(), cfg, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Complete || res.Updates != 4 {
			t.Fatalf("run %s: %+v", cfg.Finetune.Out, res)
		}
		if _, err := checkpoint.Read(cfg.Finetune.Out); err != nil {
			t.Fatalf("final checkpoint does not verify: %v", err)
		}
		data, err := os.ReadFile(filepath.Join(cfg.Finetune.Out, checkpoint.ModelFile))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	first := model(configOf("a", 2))
	start, _ := os.ReadFile(filepath.Join(from, checkpoint.ModelFile))
	if bytes.Equal(first, start) {
		t.Fatal("training left the weights unchanged; the comparison would prove nothing")
	}
	if !bytes.Equal(first, model(configOf("b", 2))) {
		t.Error("two runs with the same seed and 2 rollout workers ended with different model.ot bytes")
	}

	resumed := configOf("resumed", 2)
	if _, err := Run(context.Background(), resumed, Options{StopAfter: 2}); err != nil {
		t.Fatal(err)
	}
	other := resumed
	other.Finetune.RolloutWorkers = 3
	if _, err := Run(context.Background(), other, Options{}); err == nil || !strings.Contains(err.Error(), "finetune.rollout_workers") {
		t.Errorf("resume with 3 workers of a 2-worker run: err %v, want it to name finetune.rollout_workers", err)
	}
	if !bytes.Equal(first, model(resumed)) {
		t.Error("a run stopped after 2 updates and resumed ended with other model.ot bytes than a straight one")
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "schedrl-*")); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}
