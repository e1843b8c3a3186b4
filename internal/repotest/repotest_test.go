package repotest

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestVendoredDataMatchesChecksums checks every file each data/*/SHA256SUMS lists, and that no
// folder holds a data file its list leaves out.
func TestVendoredDataMatchesChecksums(t *testing.T) {
	lists, err := filepath.Glob(Data("*", "SHA256SUMS"))
	if err != nil || len(lists) < 4 {
		t.Fatalf("want a SHA256SUMS in each of data/openb, fgd-paper, gavel, synergy; found %v (%v)", lists, err)
	}
	for _, list := range lists {
		dir := filepath.Dir(list)
		listed := checkList(t, list)
		err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(dir, path)
			if rel != "SHA256SUMS" && rel != "README.md" && !listed[rel] {
				t.Errorf("%s: not in %s", path, list)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// checkList verifies the files of one SHA256SUMS and returns the names it lists.
func checkList(t *testing.T, list string) map[string]bool {
	t.Helper()
	f, err := os.Open(list)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	listed := map[string]bool{}
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		want, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("%s:%d: want \"<sha256>  <file>\"", list, line)
		}
		listed[name] = true
		got, err := fileSHA256(filepath.Join(filepath.Dir(list), name))
		if err != nil {
			t.Errorf("%s:%d: %v", list, line, err)
		} else if got != want {
			t.Errorf("%s:%d: %s has sha256 %s, want %s", list, line, name, got, want)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return listed
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
