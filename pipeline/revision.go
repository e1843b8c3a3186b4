package pipeline

import (
	"fmt"
	"os"
	"runtime/debug"
)

// revision is the git revision the binary was built from, set by the Makefile's LDFLAGS
// (-X github.com/schedrl/schedrl/pipeline.revision=REV, REV ending in "-dirty" when the tree
// had uncommitted changes).
var revision string

// BuildRevision is the code revision a registry version records: the build's git revision,
// or "unknown" for a binary not built by the Makefile (go test, go run).
func BuildRevision() string {
	if revision == "" {
		return "unknown"
	}
	return revision
}

// CodeRevision names the code that runs, for stage keys: the VCS revision when the binary was
// built from a clean checkout with VCS stamping, otherwise the sha256 of the executable itself
// (Go builds are reproducible, so the same source gives the same hash, and any change gives a
// new one, which a "-dirty" VCS revision would not).
func CodeRevision() (string, error) {
	var rev, modified string
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value
			}
		}
	}
	if rev != "" && modified == "false" {
		return "git:" + rev, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("code revision: %w", err)
	}
	sum, err := HashFile(exe)
	if err != nil {
		return "", fmt.Errorf("code revision: %w", err)
	}
	if rev != "" {
		return "git:" + rev + "-dirty+exe:" + sum[:16], nil
	}
	return "exe:" + sum[:16], nil
}
