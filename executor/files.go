package executor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/schedrl/schedrl/internal/atomicfile"
	"github.com/schedrl/schedrl/internal/checkpoint"
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

// PutCheckpoint ships the checkpoint in dir to pods: every file its manifest lists, then the
// manifest, as blobs under prefix. The manifest's key names the checkpoint by digest (its
// files' sha256 are in it); blobs are every key written, for DeleteBlobs.
func PutCheckpoint(ctx context.Context, store config.RegistryConfig, prefix, dir string) (key string, blobs []string, err error) {
	m, err := checkpoint.Read(dir)
	if err != nil {
		return "", nil, err
	}
	for _, f := range m.Files {
		k, sum, err := PutBlob(ctx, store, prefix, filepath.Join(dir, filepath.FromSlash(f.Path)))
		if err != nil {
			return "", blobs, err
		}
		blobs = append(blobs, k)
		if sum != f.SHA256 {
			return "", blobs, fmt.Errorf("checkpoint %s: %s has sha256 %s, its manifest says %s", dir, f.Path, sum, f.SHA256)
		}
	}
	key, _, err = PutBlob(ctx, store, prefix, filepath.Join(dir, checkpoint.ManifestFile))
	if err != nil {
		return "", blobs, err
	}
	return key, append(blobs, key), nil
}

// FetchCheckpoint writes the checkpoint whose manifest PutCheckpoint stored at key into dst:
// each file checked against the manifest's sha256, the manifest last, so dst holds a valid
// manifest only once it is complete.
func FetchCheckpoint(ctx context.Context, store config.RegistryConfig, key, dst string) error {
	cut := strings.LastIndex(key, "/blobs/")
	if cut < 0 {
		return fmt.Errorf("checkpoint %s: not a blob key (PREFIX/blobs/SHA256)", key)
	}
	prefix, sum := key[:cut], key[cut+len("/blobs/"):]
	tmp, err := os.MkdirTemp("", "schedrl-manifest-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	manifest := filepath.Join(tmp, checkpoint.ManifestFile)
	if err := FetchBlob(ctx, store, key, sum, manifest); err != nil {
		return fmt.Errorf("checkpoint %s: %w", key, err)
	}
	data, err := os.ReadFile(manifest)
	if err != nil {
		return err
	}
	m, err := checkpoint.Parse(data)
	if err != nil {
		return fmt.Errorf("checkpoint %s: %w", key, err)
	}
	for _, f := range m.Files {
		if err := FetchBlob(ctx, store, BlobKey(prefix, f.SHA256), f.SHA256, filepath.Join(dst, filepath.FromSlash(f.Path))); err != nil {
			return fmt.Errorf("checkpoint %s: %s: %w", key, f.Path, err)
		}
	}
	return atomicfile.WriteFile(filepath.Join(dst, checkpoint.ManifestFile), data, 0o644)
}
