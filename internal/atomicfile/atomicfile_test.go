package atomicfile

import (
	"os"
	"path/filepath"
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
