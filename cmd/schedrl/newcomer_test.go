package main

import (
	"bytes"
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// `schedrl finetune plot DIR` plots the run DIR, labelled by its folder name, beside --run's.
func TestFinetunePlotTakesADir(t *testing.T) {
	var got *finetunePlotOptions
	cmd := newFinetunePlotCmd(func(_ context.Context, o *finetunePlotOptions) error {
		got = o
		return nil
	})
	cmd.SetArgs([]string{"runs/finetune/", "--run", "scratch=runs/finetune-scratch"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if want := []string{"finetune=runs/finetune/", "scratch=runs/finetune-scratch"}; !slices.Equal(got.Runs, want) {
		t.Fatalf("runs %q, want %q", got.Runs, want)
	}
}

// Through the whole binary, DIR reaches the run reader: the error is about the run, not the
// command line.
func TestFinetunePlotDirReachesTheRun(t *testing.T) {
	dir := t.TempDir()
	var stderr bytes.Buffer
	code := execute(newRootCmd(), []string{"finetune", "plot", dir, "--out", filepath.Join(dir, "p.png")}, &stderr)
	if code == 0 || !strings.Contains(stderr.String(), "no finetune checkpoint") {
		t.Fatalf("exit %d, stderr %q: want the run's own error (no finetune checkpoint)", code, stderr.String())
	}
	stderr.Reset()
	if code := execute(newRootCmd(), []string{"finetune", "plot"}, &stderr); code == 0 || !strings.Contains(stderr.String(), "DIR or --run") {
		t.Fatalf("no run: exit %d, stderr %q", code, stderr.String())
	}
}
