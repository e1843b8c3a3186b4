package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestWriteFileReplacesWhole(t *testing.T) {
	p := filepath.Join(t.TempDir(), "sub", "out.txt")
	if err := WriteFile(p, []byte("one"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(p, []byte("two"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(p)
	if string(got) != "two" {
		t.Fatalf("got %q", got)
	}
	entries, _ := os.ReadDir(filepath.Dir(p))
	if len(entries) != 1 {
		t.Fatalf("temporary files left behind: %v", entries)
	}
}

func TestAbortLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	f, err := Create(filepath.Join(dir, "x"), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("partial"))
	f.Abort()
	d, err := CreateDir(filepath.Join(dir, "ds"), false)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(d.Tmp, "a"), []byte("a"), 0o644)
	d.Abort()
	entries, _ := os.ReadDir(dir)
	if len(entries) != 0 {
		t.Fatalf("left behind: %v", entries)
	}
}

func TestCreateDirRefusesExistingWithoutForce(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "ds")
	os.Mkdir(out, 0o755)
	if _, err := CreateDir(out, false); err == nil {
		t.Fatal("expected an error for an existing directory")
	}
	d, err := CreateDir(out, true)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(d.Tmp, "new"), nil, 0o644)
	if err := d.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(out, "new")); err != nil {
		t.Fatal(err)
	}
}

// Issue 26 case 5: of concurrent writers to one output directory exactly one wins, even when
// they all pass the early existence check; the others fail saying the path exists.
func TestCreateDirConcurrentWritersOneWins(t *testing.T) {
	out := filepath.Join(t.TempDir(), "ds")
	const writers = 8
	dirs := make([]*Dir, writers)
	for i := range dirs {
		d, err := CreateDir(out, false)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d.Tmp, "who"), []byte{byte('0' + i)}, 0o644); err != nil {
			t.Fatal(err)
		}
		dirs[i] = d
	}
	errs := make(chan error, writers)
	var wg sync.WaitGroup
	for _, d := range dirs {
		wg.Add(1)
		go func() { defer wg.Done(); errs <- d.Commit() }()
	}
	wg.Wait()
	close(errs)
	won := 0
	for err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, ErrExists) || !strings.Contains(err.Error(), "another writer created it first"):
			t.Errorf("loser's error: %v", err)
		}
	}
	entries, _ := os.ReadDir(filepath.Dir(out))
	if won != 1 || len(entries) != 1 {
		t.Fatalf("%d writers won, %d entries left: %v", won, len(entries), entries)
	}
}

// An empty directory in the way is no exception (rename(2) alone would replace it).
func TestCreateDirRefusesEmptyDirectoryAppearingLate(t *testing.T) {
	out := filepath.Join(t.TempDir(), "ds")
	d, err := CreateDir(out, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := d.Commit(); !errors.Is(err, ErrExists) {
		t.Fatalf("commit onto an empty directory: %v", err)
	}
}

// Issue 26 case 6: a file output whose path is a directory is refused with what is wrong.
func TestCreateRefusesDirectory(t *testing.T) {
	dir := t.TempDir()
	_, err := Create(dir, 0o644)
	if err == nil || !strings.Contains(err.Error(), "is a directory; want a file name") {
		t.Fatalf("got %v", err)
	}
}

// Issue 26 case 2: what an interrupted process has in flight is removed, and readers can tell
// temporaries from outputs.
func TestRemoveTemps(t *testing.T) {
	dir := t.TempDir()
	f, err := Create(filepath.Join(dir, "a.jsonl"), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if !IsTemp(f.Name()) || IsTemp(filepath.Join(dir, "a.jsonl")) {
		t.Fatalf("IsTemp(%s) wrong", f.Name())
	}
	if _, err := CreateDir(filepath.Join(dir, "d"), false); err != nil {
		t.Fatal(err)
	}
	RemoveTemps()
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("left behind: %v", entries)
	}
}

// Issue 26 case 2: a temporary left by a killed writer is never taken for input, though
// Go's glob matches dot-files.
func TestGlobSkipsTemporaries(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"a_seed1.jsonl", ".a_seed5.jsonl.tmp-123", "b_seed2.jsonl"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Glob(filepath.Join(dir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(dir, "a_seed1.jsonl"), filepath.Join(dir, "b_seed2.jsonl")}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("Glob = %v, want %v", got, want)
	}
}
