// Package atomicfile writes outputs under a temporary name and renames them into place,
// so a failed or interrupted stage never leaves a half-written file or directory behind
// that a later stage could mistake for a result.
package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
)

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

// Create opens a temporary file next to path.
func Create(path string, perm os.FileMode) (*File, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	if err := tmp.Chmod(perm); err != nil {
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
}

// Dir is a directory being filled under a temporary name next to its final path.
type Dir struct {
	Tmp  string // write the contents here
	path string
	done bool
}

// CreateDir makes a temporary directory next to path. It refuses an existing path
// unless force is set, in which case Commit replaces it.
func CreateDir(path string, force bool) (*Dir, error) {
	if _, err := os.Stat(path); err == nil && !force {
		return nil, fmt.Errorf("%s already exists (use --force to replace it)", path)
	}
	parent := filepath.Dir(path)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", parent, err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	return &Dir{Tmp: tmp, path: path}, nil
}

// Commit moves the finished directory into place, replacing any previous one.
func (d *Dir) Commit() error {
	if d.done {
		return nil
	}
	d.done = true
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
}
