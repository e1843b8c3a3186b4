package main

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A command's constructor fills its options from the flags and the config; a test sees them
// through its own runF, without running the command.
func TestSimFlagsFillOptions(t *testing.T) {
	var got *simOptions
	cmd := newSimCmd(func(_ context.Context, o *simOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--pods", "a.csv,b.csv", "--seed", "7", "--workers", "3", "--log-dir", "logs", "--json"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if !got.Batch || !slices.Equal(got.PodList, []string{"a.csv", "b.csv"}) || got.Config.Sim.Pods != "a.csv" ||
		got.Config.Sim.Seed != 7 || got.Workers != 3 || got.LogDir != "logs" || !got.JSON {
		t.Fatalf("options: %+v", *got)
	}
}

// A run function is called directly with its options (issue 26 case 7 through inspect).
func TestDatasetsInspectRefusesCheckpoint(t *testing.T) {
	ckpt := filepath.Dir(writeFile(t, filepath.Join(t.TempDir(), "ck", "manifest.json"), `{"format":1}`))
	err := runDatasetsInspect(context.Background(), &datasetsInspectOptions{Dir: ckpt})
	if err == nil || !strings.Contains(err.Error(), ckpt+" is a checkpoint, not a dataset") {
		t.Fatalf("got %v", err)
	}
}
