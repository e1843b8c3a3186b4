package stages

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/internal/repotest"
	"github.com/schedrl/schedrl/pipeline"
)

// TestFinetuneKeyCoversEnvSection: a fine-tune's episodes read their environment's section, so
// a change there must give another cache key (else a stale checkpoint is reused).
func TestFinetuneKeyCoversEnvSection(t *testing.T) {
	noop := func(context.Context, config.Config, pipeline.Env) (pipeline.Result, error) {
		return pipeline.Result{}, nil
	}
	for _, tc := range []struct {
		env  string
		edit func(*config.Config)
	}{
		{"defrag", func(c *config.Config) { c.Defrag.MigrationCost += 0.5 }},
		{"defrag-online", func(c *config.Config) { c.DefragOnline.Every += 60 }},
		{"maifs", func(c *config.Config) { c.MAIFS.MakespanWeight += 1 }},
	} {
		t.Run(tc.env, func(t *testing.T) {
			key := func(edit func(*config.Config)) string {
				cfg := config.Default()
				cfg.Finetune.Env = tc.env
				cfg.Finetune.Nodes = repotest.OpenbNodes()
				cfg.Finetune.Traces = nil
				if edit != nil {
					edit(&cfg)
				}
				s, err := newFinetune(cfg, noop)
				if err != nil {
					t.Fatal(err)
				}
				b, err := json.Marshal(s.Config())
				if err != nil {
					t.Fatal(err)
				}
				return string(b)
			}
			if key(nil) == key(tc.edit) {
				t.Fatalf("finetune.env %s: the cache key ignores the environment's section", tc.env)
			}
		})
	}
}
