package config

import (
	"path/filepath"
	"reflect"
	"testing"
)

// A binary run from another folder reads the data its defaults name from its own checkout
// (bin/schedrl's parent), while paths the user gave, and those the folder has, stay as they are.
func TestRepoFilesResolveBesideTheBinary(t *testing.T) {
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	cfg := Default()
	cfg.Eval.Nodes = "data/openb/openb_node_list_gpu_node.csv.mine"
	keys, _ := schemaOf(reflect.TypeFor[Config]())
	resolveRepoFiles(&cfg, keys, filepath.Join(repo, "bin", "schedrl"))
	if want := filepath.Join(repo, "data/openb/openb_pod_list_default.csv"); cfg.Sim.Pods != want {
		t.Errorf("sim.pods %q, want %q", cfg.Sim.Pods, want)
	}
	if want := filepath.Join(repo, "data/gavel/simulation_throughputs.json"); cfg.MAIFS.Throughputs != want {
		t.Errorf("maifs.throughputs %q, want %q", cfg.MAIFS.Throughputs, want)
	}
	if cfg.Eval.Nodes != "data/openb/openb_node_list_gpu_node.csv.mine" {
		t.Errorf("a path the user gave moved: eval.nodes %q", cfg.Eval.Nodes)
	}
	if cfg.Pretrain.Out != "runs/pretrain" {
		t.Errorf("an output moved: pretrain.out %q", cfg.Pretrain.Out)
	}
}

// RepoFile leaves a path the working folder has, and one that names no repository file.
func TestRepoFileKeepsWhatIsHere(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, p := range []string{"runs/x", "/etc/hostname", "data/nothing-here.csv"} {
		if got := RepoFile(p); got != p {
			t.Errorf("RepoFile(%q) = %q", p, got)
		}
	}
}
