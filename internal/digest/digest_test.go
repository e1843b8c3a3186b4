package digest

import (
	"os"
	"path/filepath"
	"testing"
)

func TestFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("abc"), 0o644); err != nil {
		t.Fatal(err)
	}
	sum, size, err := File(path)
	// sha256("abc"), FIPS 180-2 appendix B.1.
	if err != nil || size != 3 || sum != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Fatalf("File = %s, %d, %v", sum, size, err)
	}
	if _, _, err := File(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Fatal("missing file: no error")
	}
}
