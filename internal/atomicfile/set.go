package atomicfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// A Set is a group of files one run writes into a folder, each file atomically: the decision
// logs of a sim batch, demonstration logs. While the run writes, a marker file (IncompleteName)
// says the set is incomplete; Commit removes it. A run that fails or is interrupted leaves
// the marker, so the files it did write are marked incomplete, and Glob refuses them to
// readers. A folder may hold several sets with distinct name prefixes (each run of
// `defrag online --demos` adds its own); a set with an empty prefix owns the whole folder.
type Set struct {
	dir, prefix, marker string
	done                bool
}

// IncompleteName is the marker of the set of files named prefix*: PREFIX.INCOMPLETE, or
// INCOMPLETE for a set owning its folder.
func IncompleteName(prefix string) string {
	if prefix == "" {
		return "INCOMPLETE"
	}
	return prefix + ".INCOMPLETE"
}

// BeginSet starts the set of files named prefix* in dir, creating dir (not its parents).
// Files of an earlier set with this prefix, complete or not, are refused unless force is set,
// and then removed first, so the folder never holds one run's files beside another's. what
// describes the run for the marker ("sim --seeds 42-46").
func BeginSet(dir, prefix, what string, force bool) (*Set, error) {
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, err
	}
	old, err := setFiles(dir, prefix)
	if err != nil {
		return nil, err
	}
	if len(old) > 0 && !force {
		return nil, fmt.Errorf("%s: a set of an earlier run %w (%d files %s); use --force to replace it",
			dir, ErrExists, len(old), filepath.Join(dir, prefix+"*"))
	}
	for _, f := range old {
		if err := os.Remove(filepath.Join(dir, f)); err != nil {
			return nil, fmt.Errorf("replace %s: %w", dir, err)
		}
	}
	s := &Set{dir: dir, prefix: prefix, marker: filepath.Join(dir, IncompleteName(prefix))}
	note := fmt.Sprintf("The files %s* here are an incomplete set: the run that wrote them (%s) failed or was interrupted.\nRerun it with --force.\n", prefix, what)
	if err := WriteFile(s.marker, []byte(note), 0o644); err != nil {
		return nil, err
	}
	return s, nil
}

// setFiles lists the files of dir named prefix* (temporaries left out, markers in).
func setFiles(dir, prefix string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasPrefix(e.Name(), prefix) && !IsTemp(e.Name()) {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// Commit marks the set complete; after a failure, not calling it leaves the set marked
// incomplete.
func (s *Set) Commit() error {
	if s.done {
		return nil
	}
	s.done = true
	if err := os.Remove(s.marker); err != nil {
		return fmt.Errorf("complete %s: %w", s.dir, err)
	}
	return nil
}

// incompleteSet returns the marker of an incomplete set that file belongs to, or "".
func incompleteSet(file string) string {
	dir, base := filepath.Split(file)
	markers, _ := filepath.Glob(filepath.Join(dir, "*INCOMPLETE"))
	for _, m := range markers {
		name := filepath.Base(m)
		prefix := strings.TrimSuffix(strings.TrimSuffix(name, "INCOMPLETE"), ".")
		if name == "INCOMPLETE" || strings.HasPrefix(base, prefix) {
			return m
		}
	}
	return ""
}
