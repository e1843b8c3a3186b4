package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A set is marked incomplete until committed; readers refuse an incomplete set's files; a
// later set of the same prefix needs force and then replaces the earlier one whole; sets of
// other prefixes in the folder are left alone.
func TestSets(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "logs")
	a, err := BeginSet(dir, "a-", "test a", false)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a-1.jsonl", "a-2.jsonl"} {
		if err := WriteFile(filepath.Join(dir, name), []byte("{}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Glob(filepath.Join(dir, "*.jsonl")); err == nil || !strings.Contains(err.Error(), "a-1.jsonl belongs to an incomplete set") {
		t.Errorf("incomplete set read: %v", err)
	}
	b, err := BeginSet(dir, "b-", "test b", false)
	if err != nil {
		t.Fatal(err)
	}
	WriteFile(filepath.Join(dir, "b-1.jsonl"), []byte("{}\n"), 0o644)
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	if got, err := Glob(filepath.Join(dir, "b-*.jsonl")); err != nil || len(got) != 1 {
		t.Errorf("complete set b: %v, %v", got, err)
	}
	if err := a.Commit(); err != nil {
		t.Fatal(err)
	}
	if got, err := Glob(filepath.Join(dir, "*.jsonl")); err != nil || len(got) != 3 {
		t.Errorf("both sets complete: %v, %v", got, err)
	}
	if _, err := BeginSet(dir, "a-", "test a again", false); !errors.Is(err, ErrExists) || !strings.Contains(err.Error(), "a set of an earlier run already exists (2 files") {
		t.Errorf("second run without force: %v", err)
	}
	if _, err := BeginSet(dir, "a-", "test a again", true); err != nil {
		t.Fatal(err)
	}
	left, _ := os.ReadDir(dir)
	var names []string
	for _, e := range left {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != "a-.INCOMPLETE,b-1.jsonl" {
		t.Errorf("after force: %v, want the old a- set gone, b- kept, a- marked incomplete", names)
	}
}
