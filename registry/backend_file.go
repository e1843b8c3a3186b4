package registry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/schedrl/schedrl/internal/atomicfile"
)

// fileBackend keeps objects as files under a root directory. Create writes a temporary file
// and hard-links it into place: link(2) fails when the target exists, which makes
// create-if-absent atomic across processes, as S3's If-None-Match is.
type fileBackend struct{ root string }

// newFileBackend opens the folder root without creating it: the first Create or Put does, so
// that a read-only command on a mistyped store fails (ErrNoStore) and leaves nothing behind.
func newFileBackend(root string) (*fileBackend, error) {
	if st, err := os.Stat(root); err == nil && !st.IsDir() {
		return nil, fmt.Errorf("registry store %s: not a directory", root)
	}
	return &fileBackend{root: root}, nil
}

func (b *fileBackend) path(key string) string { return filepath.Join(b.root, filepath.FromSlash(key)) }

func (b *fileBackend) Create(_ context.Context, key string, r io.Reader, _ int64) error {
	dst := b.path(key)
	f, err := atomicfile.Create(dst, 0o644)
	if err != nil {
		return err
	}
	defer f.Abort()
	if _, err := io.Copy(f, r); err != nil {
		return fmt.Errorf("write %s: %w", dst, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dst, err)
	}
	if err := os.Link(f.Name(), dst); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s: %w", b.URI(key), ErrExists)
		}
		return fmt.Errorf("create %s: %w", dst, err)
	}
	return nil
}

func (b *fileBackend) Put(_ context.Context, key string, r io.Reader, _ int64) error {
	f, err := atomicfile.Create(b.path(key), 0o644)
	if err != nil {
		return err
	}
	defer f.Abort()
	if _, err := io.Copy(f, r); err != nil {
		return fmt.Errorf("write %s: %w", b.path(key), err)
	}
	return f.Commit()
}

func (b *fileBackend) Get(_ context.Context, key string) (io.ReadCloser, error) {
	f, err := os.Open(b.path(key))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", b.URI(key), ErrNotFound)
	}
	return f, err
}

// Delete removes key and then the folders it leaves empty, so that a removed version folder
// does not keep its number taken.
func (b *fileBackend) Delete(_ context.Context, key string) error {
	if err := os.Remove(b.path(key)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	b.removeEmptyParents(b.path(key))
	return nil
}

// removeEmptyParents removes the folders above path up to the root while they are empty; a
// folder that is not empty (or was just refilled by a writer) stays.
func (b *fileBackend) removeEmptyParents(path string) {
	for dir := filepath.Dir(path); dir != b.root && strings.HasPrefix(dir, b.root+string(filepath.Separator)); dir = filepath.Dir(dir) {
		if os.Remove(dir) != nil {
			return
		}
	}
}

// removeTemps removes the hidden temporaries older than olderThan under prefix: what a
// writer killed mid-write leaves (a live writer's temporary is younger).
func (b *fileBackend) removeTemps(prefix string, olderThan time.Duration, dryRun bool) ([]string, error) {
	var found []string
	err := filepath.WalkDir(b.path(prefix), func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if !atomicfile.IsTemp(d.Name()) {
			return nil
		}
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if time.Since(info.ModTime()) < olderThan {
			return nil
		}
		found = append(found, path)
		if dryRun {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if err := os.RemoveAll(path); err != nil {
			return err
		}
		b.removeEmptyParents(path)
		if d.IsDir() {
			return fs.SkipDir
		}
		return nil
	})
	return found, err
}

func (b *fileBackend) List(_ context.Context, prefix string) ([]string, error) {
	entries, err := os.ReadDir(b.path(prefix))
	if errors.Is(err, fs.ErrNotExist) {
		if _, rerr := os.Stat(b.root); errors.Is(rerr, fs.ErrNotExist) {
			return nil, fmt.Errorf("store %s does not exist: %w", b.URI(""), ErrNoStore)
		}
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		// Hidden temporaries of writers in flight are not objects.
		if atomicfile.IsTemp(e.Name()) {
			continue
		}
		if e.IsDir() {
			names = append(names, e.Name()+"/")
		} else {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names, nil
}

func (b *fileBackend) URI(key string) string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(b.path(key))}).String()
}
