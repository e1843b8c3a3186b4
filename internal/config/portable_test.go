package config

import (
	"path/filepath"
	"testing"
)

// A default path resolved to a copy elsewhere goes back to the default; a path the user
// wrote, and every other key, stays.
func TestPortable(t *testing.T) {
	cfg := Default()
	def := cfg.Finetune.Nodes
	cfg.Finetune.Nodes = RepoFile(def)
	cfg.Finetune.TracesDir = filepath.Join(t.TempDir(), "mine")
	cfg.Seed = 9
	p := Portable(cfg)
	if p.Finetune.Nodes != def || p.Finetune.TracesDir != cfg.Finetune.TracesDir || p.Seed != 9 {
		t.Errorf("portable: nodes %q (want %q), traces_dir %q (want %q), seed %d", p.Finetune.Nodes, def, p.Finetune.TracesDir, cfg.Finetune.TracesDir, p.Seed)
	}
}
