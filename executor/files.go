package executor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/schedrl/schedrl/internal/atomicfile"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/internal/digest"
	"github.com/schedrl/schedrl/registry"
)

// A shard's output files too large for its part (decision logs of a few MB each, a
// checkpoint) travel through the store as blobs named by their sha256: the part, or the pod's
// command, carries only the key, and the reader checks the bytes against it.

// BlobKey is where a file of the given sha256 is stored under prefix.
func BlobKey(prefix, sum string) string { return prefix + "/blobs/" + sum }

// PutBlob stores the file at path under prefix, content-addressed, and returns its key and
// sha256. The same bytes stored before (a retried pod) are left as they are.
func PutBlob(ctx context.Context, store config.RegistryConfig, prefix, path string) (key, sum string, err error) {
	b, err := registry.OpenBackend(store)
	if err != nil {
		return "", "", err
	}
	sum, size, err := digest.File(path)
	if err != nil {
		return "", "", err
	}
	f, err := os.Open(path)
	if err != nil {
		return "", "", err
	}
	defer f.Close()
	key = BlobKey(prefix, sum)
	err = b.Create(ctx, key, f, size)
	if errors.Is(err, registry.ErrExists) {
		err = nil
	}
	return key, sum, err
}

// FetchBlob copies the blob at key to dst (written under a temporary name, renamed once its
// sha256 is checked against sum).
func FetchBlob(ctx context.Context, store config.RegistryConfig, key, sum, dst string) error {
	b, err := registry.OpenBackend(store)
	if err != nil {
		return err
	}
	r, err := b.Get(ctx, key)
	if err != nil {
		return err
	}
	defer r.Close()
	f, err := atomicfile.Create(dst, 0o644)
	if err != nil {
		return err
	}
	defer f.Abort()
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(f, h), r); err != nil {
		return fmt.Errorf("%s: %w", b.URI(key), err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != sum {
		return fmt.Errorf("%s: sha256 %s, want %s (corrupted or replaced in the store)", b.URI(key), got, sum)
	}
	return f.Commit()
}

// DeleteBlobs removes blobs once read; a left-over is only garbage, so the error is for a
// log line.
func DeleteBlobs(ctx context.Context, store config.RegistryConfig, keys []string) error {
	b, err := registry.OpenBackend(store)
	if err != nil {
		return err
	}
	var errs []error
	for _, k := range keys {
		errs = append(errs, b.Delete(ctx, k))
	}
	return errors.Join(errs...)
}
