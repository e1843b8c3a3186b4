package stages

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSourceLogs: pipeline.logs.source takes every *.jsonl of a folder (hidden temporaries
// skipped) and refuses a missing folder, a store prefix and datasets.logs set too.
func TestSourceLogs(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"b.jsonl", "a.jsonl", ".decisions-x.jsonl.tmp-open", "notes.txt"} {
		os.WriteFile(filepath.Join(dir, name), []byte(name), 0o644)
	}
	s, err := newSourceLogs(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.files) != 2 || filepath.Base(s.files[0]) != "a.jsonl" || filepath.Base(s.files[1]) != "b.jsonl" {
		t.Errorf("files %v, want a.jsonl, b.jsonl", s.files)
	}
	for _, tc := range []struct{ src, logs, want string }{
		{dir, "x/*.jsonl", "set one of them"},
		{"gs://bucket/logs", "", "want a folder or s3://BUCKET/PREFIX"},
		{filepath.Join(dir, "missing"), "", "not a folder"},
		{t.TempDir(), "", "matches no file"},
	} {
		if _, err := newSourceLogs(tc.src, tc.logs); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("source %q logs %q: error %v, want %q", tc.src, tc.logs, err, tc.want)
		}
	}
}
