// Package atomicfile writes outputs under a temporary name and renames them into place,
// so a failed or interrupted stage never leaves a half-written file or directory behind
// that a later stage could mistake for a result. Temporaries are hidden names
// (".NAME.tmp-*", see IsTemp) that readers skip, and the package remembers the ones in flight
// so that an interrupted process can remove them (RemoveTemps) before it exits.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// ErrExists is returned by a Dir's Commit when its path appeared while it was being written.
var ErrExists = errors.New("already exists")

// live holds the temporaries of this process not yet committed or aborted.
var live sync.Map

// RemoveTemps removes every temporary of this process still in flight: what an interrupted
// command calls before it exits, when its writers cannot be waited for.
func RemoveTemps() {
	live.Range(func(k, _ any) bool {
		os.RemoveAll(k.(string))
		live.Delete(k)
		return true
	})
}

// IsTemp reports whether name (a base name or path) is a temporary of this package: readers
// that glob a folder must skip them.
func IsTemp(name string) bool {
	base := filepath.Base(name)
	return strings.HasPrefix(base, ".") && strings.Contains(base, ".tmp-")
}

// WriteFile writes data to path atomically: a temporary file in the same directory is
// written, synced and renamed over path.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	f, err := Create(path, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Abort()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Commit()
}

// File is a file being written under a temporary name; Commit renames it into place,
// Abort removes it. Calling Abort after Commit is a no-op, so `defer f.Abort()` is safe.
type File struct {
	*os.File
	path string
	done bool
}

// Create opens a temporary file next to path; an existing directory at path is refused.
func Create(path string, perm os.FileMode) (*File, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return nil, fmt.Errorf("%s is a directory; want a file name", path)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	live.Store(tmp.Name(), true)
	if err := tmp.Chmod(perm); err != nil {
		live.Delete(tmp.Name())
		tmp.Close()
		os.Remove(tmp.Name())
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	return &File{File: tmp, path: path}, nil
}

// Commit flushes the file to disk and renames it to its final path.
func (f *File) Commit() error {
	if f.done {
		return nil
	}
	f.done = true
	defer live.Delete(f.Name())
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(f.Name())
		return fmt.Errorf("sync %s: %w", f.path, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("close %s: %w", f.path, err)
	}
	if err := os.Rename(f.Name(), f.path); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("rename into %s: %w", f.path, err)
	}
	return nil
}

// Abort discards the temporary file.
func (f *File) Abort() {
	if f.done {
		return
	}
	f.done = true
	f.Close()
	os.Remove(f.Name())
	live.Delete(f.Name())
}

// Dir is a directory being filled under a temporary name next to its final path.
type Dir struct {
	Tmp   string // write the contents here
	path  string
	force bool
	done  bool
}

// CreateDir makes a temporary directory next to path. It refuses an existing path unless
// force is set, in which case Commit replaces it. Without force the check is repeated by
// Commit in the same step as the rename, so of concurrent writers to one path exactly one
// succeeds.
func CreateDir(path string, force bool) (*Dir, error) {
	if _, err := os.Stat(path); err == nil && !force {
		return nil, existsError(path)
	}
	parent := filepath.Dir(path)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", parent, err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	live.Store(tmp, true)
	return &Dir{Tmp: tmp, path: path, force: force}, nil
}

func existsError(path string) error {
	return fmt.Errorf("%s %w (use --force to replace it)", path, ErrExists)
}

// Commit moves the finished directory into place: onto a path that does not exist, atomically
// (renameNoReplace), or with force replacing any previous one.
func (d *Dir) Commit() error {
	if d.done {
		return nil
	}
	d.done = true
	defer live.Delete(d.Tmp)
	if !d.force {
		err := renameNoReplace(d.Tmp, d.path)
		if err != nil {
			os.RemoveAll(d.Tmp)
			if errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("%w: another writer created it first", existsError(d.path))
			}
			return fmt.Errorf("rename into %s: %w", d.path, err)
		}
		return nil
	}
	if err := os.RemoveAll(d.path); err != nil {
		os.RemoveAll(d.Tmp)
		return fmt.Errorf("replace %s: %w", d.path, err)
	}
	if err := os.Rename(d.Tmp, d.path); err != nil {
		os.RemoveAll(d.Tmp)
		return fmt.Errorf("rename into %s: %w", d.path, err)
	}
	return nil
}

// Abort removes the temporary directory.
func (d *Dir) Abort() {
	if d.done {
		return
	}
	d.done = true
	os.RemoveAll(d.Tmp)
	live.Delete(d.Tmp)
}

// Glob is filepath.Glob without the temporaries of writers (in flight or left by a killed
// process): what every reader of a user's glob calls. A match that belongs to an incomplete
// Set is an error naming the set's marker.
func Glob(pattern string) ([]string, error) {
	matches, err := filepath.Glob(pattern)
	kept := matches[:0]
	for _, m := range matches {
		if IsTemp(m) || strings.HasSuffix(m, "INCOMPLETE") {
			continue
		}
		if marker := incompleteSet(m); marker != "" {
			return nil, fmt.Errorf("%s belongs to an incomplete set (%s: its run failed or was interrupted); rerun that command with --force", m, marker)
		}
		kept = append(kept, m)
	}
	return kept, err
}
