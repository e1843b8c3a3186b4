package inputfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLimits(t *testing.T) {
	small := Limit{Bytes: 10, What: "a test input"}
	dir := t.TempDir()
	ok := filepath.Join(dir, "ok")
	big := filepath.Join(dir, "big")
	os.WriteFile(ok, []byte("0123456789"), 0o644)
	os.WriteFile(big, []byte("0123456789x"), 0o644)
	if data, err := ReadFile(ok, small); err != nil || string(data) != "0123456789" {
		t.Errorf("at the limit: %q, %v", data, err)
	}
	if _, err := Open(big, small); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), big+": 11 bytes, over the limit (a test input may have at most 10 bytes)") {
		t.Errorf("regular file over the limit: %v", err)
	}
	// A device that never ends fails at the limit rather than filling memory.
	if _, err := ReadFile("/dev/zero", Config); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "/dev/zero: more than 1 MiB") {
		t.Errorf("/dev/zero: %v", err)
	}
	if _, err := Open(dir, small); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("directory: %v", err)
	}
}
