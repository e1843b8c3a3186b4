package registry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/schedrl/schedrl/internal/config"
)

// Errors a Backend returns for the outcomes the registry acts on.
var (
	ErrNotFound = errors.New("not found")
	ErrExists   = errors.New("already exists")
	// ErrNoStore: the store (folder or bucket) does not exist; only a write creates a folder.
	ErrNoStore = errors.New("no such store")
)

// Backend is an object store holding keys like "models/NAME/3/model.ot".
type Backend interface {
	// Create stores key only if it does not exist yet; otherwise it returns ErrExists.
	// A created object is complete: readers never see part of it.
	Create(ctx context.Context, key string, r io.Reader, size int64) error
	// Put stores key, replacing any previous object (used only for aliases and markers).
	Put(ctx context.Context, key string, r io.Reader, size int64) error
	// Get opens key, or returns ErrNotFound.
	Get(ctx context.Context, key string) (io.ReadCloser, error)
	// Delete removes key; a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// List returns the names directly under prefix (which ends in "/"), sub-folders with a
	// trailing "/", sorted; ErrNoStore when the store itself does not exist.
	List(ctx context.Context, prefix string) ([]string, error)
	// URI names key for people and for MLflow: file:///abs/dir/key or s3://bucket/prefix/key.
	URI(key string) string
}

// OpenBackend opens the store named by cfg.Store: file://DIR or s3://BUCKET[/PREFIX].
func OpenBackend(cfg config.RegistryConfig) (Backend, error) {
	u, err := url.Parse(cfg.Store)
	if err != nil {
		return nil, fmt.Errorf("registry store %q: %w", cfg.Store, err)
	}
	switch u.Scheme {
	case "file":
		// file://rel/dir parses with the first segment as host; both forms name a path.
		dir := u.Host + u.Path
		if dir == "" {
			return nil, fmt.Errorf("registry store %q: no directory", cfg.Store)
		}
		abs, err := filepath.Abs(filepath.FromSlash(dir))
		if err != nil {
			return nil, fmt.Errorf("registry store %q: %w", cfg.Store, err)
		}
		return newFileBackend(abs)
	case "s3":
		return newS3Backend(u.Host, strings.Trim(u.Path, "/"), cfg.S3)
	}
	return nil, fmt.Errorf("registry store %q: want file://DIR or s3://BUCKET/PREFIX", cfg.Store)
}
