package pipeline

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestKilledRunResumes runs the pipeline in a child process, kills it with SIGKILL in the middle
// of the resumable stage, and checks that a rerun skips the finished stages, resumes the
// stage from its last checkpoint and ends with the same output as an uninterrupted run.
func TestKilledRunResumes(t *testing.T) {
	dir := t.TempDir()
	ready := filepath.Join(t.TempDir(), "ready")
	child := exec.Command(os.Args[0], "-test.run=^TestKillChild$")
	child.Env = append(os.Environ(), "PIPELINE_KILL_DIR="+dir, "PIPELINE_KILL_READY="+ready)
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		if time.Now().After(deadline) {
			child.Process.Kill()
			t.Fatal("child never reached the kill point")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	child.Wait()

	killed, err := LoadRecord(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := statuses(killed); got != "text=done,count=done,train=running,report=pending" {
		t.Errorf("record left by the killed run: %s", got)
	}

	w := newWorld()
	rec, err := w.pipeline(t).Run(context.Background(), opts(dir))
	if err != nil {
		t.Fatal(err)
	}
	if got := w.ran(); got != "train,report" {
		t.Errorf("rerun ran %q, want train,report", got)
	}
	if !rec.Stages[2].Resumed || w.resumedAt != 6 {
		t.Errorf("train resumed=%v at step %d, want step 6", rec.Stages[2].Resumed, w.resumedAt)
	}
	if got, want := rec.Stages[3].Output.Hash, uninterruptedOutput(t, newWorld()); got != want {
		t.Errorf("resumed result %s differs from uninterrupted %s", got, want)
	}
}

// TestKillChild is the child process of TestKilledRunResumes; it blocks after train's 6th step.
func TestKillChild(t *testing.T) {
	dir, ready := os.Getenv("PIPELINE_KILL_DIR"), os.Getenv("PIPELINE_KILL_READY")
	if dir == "" {
		t.Skip("child process of TestKilledRunResumes")
	}
	w := newWorld()
	w.trainHook = func(step int) {
		if step == 6 {
			os.WriteFile(ready, nil, 0o644)
			select {}
		}
	}
	w.pipeline(t).Run(context.Background(), opts(dir))
	t.Fatal("child was not killed")
}
