package executor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/schedrl/schedrl/internal/config"
)

// Local returns the parts in shard order and reports progress up to the total; a failing
// shard is named and stops the work.
func TestLocalRunsShardsInOrder(t *testing.T) {
	var seen []int
	w := Work{Name: "eval", Shards: 5,
		Local:    func(_ context.Context, i int) ([]byte, error) { return []byte(fmt.Sprint(i * i)), nil },
		Progress: func(done, total int) { seen = append(seen, done*10+total) }}
	parts, err := (&Local{Parallelism: 3}).Run(context.Background(), w)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range parts {
		if string(p) != fmt.Sprint(i*i) {
			t.Fatalf("part %d is %q", i, p)
		}
	}
	if len(seen) != 5 || seen[4] != 55 {
		t.Errorf("progress %v, want 5 calls ending at 5/5", seen)
	}
	w.Local = func(_ context.Context, i int) ([]byte, error) {
		if i == 3 {
			return nil, errors.New("boom")
		}
		return nil, nil
	}
	w.Progress = nil
	if _, err := (&Local{Parallelism: 2}).Run(context.Background(), w); err == nil || !strings.Contains(err.Error(), "eval shard 3/5: boom") {
		t.Errorf("err %v, want it to name shard 3/5", err)
	}
}

func TestInIndexes(t *testing.T) {
	for _, c := range []struct {
		list, i string
		want    bool
	}{{"1,3-5", "4", true}, {"1,3-5", "2", false}, {"0", "0", true}, {"", "0", false}, {"7-9", "10", false}} {
		if got := inIndexes(c.list, c.i); got != c.want {
			t.Errorf("inIndexes(%q, %q) = %v", c.list, c.i, got)
		}
	}
}

// The kubernetes executor needs a store its pods reach: a folder is refused by key.
func TestKubernetesNeedsAnS3Store(t *testing.T) {
	cfg := config.Default()
	cfg.Pipeline.Executor.Kind, cfg.Pipeline.Executor.Image = "kubernetes", "schedrl/schedrl:x"
	_, err := New(cfg.Pipeline.Executor, cfg.Registry, nil)
	if err == nil || !strings.Contains(err.Error(), "registry.store") {
		t.Errorf("err %v, want it to name registry.store", err)
	}
}
