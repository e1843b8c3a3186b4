package registry

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/schedrl/schedrl/internal/atomicfile"
	"github.com/schedrl/schedrl/internal/checkpoint"
)

const claimFile = ".claim"

// claim records which checkpoint took a version number, so that a rerun of a failed publish
// of the same checkpoint resumes its number instead of leaving a gap.
type claim struct {
	Digest string    `json:"digest"`
	Host   string    `json:"host"`
	PID    int       `json:"pid"`
	Time   time.Time `json:"time"`
}

// Publish stores the checkpoint in dir as the next version of model and returns it. The
// directory must hold a valid checkpoint (manifest and matching files). Publishing a
// checkpoint that is already a version of model returns that version with Existing set.
// With an MLflow mirror configured, the version is mirrored afterwards; a mirror failure is
// logged, not returned: the store is the source of truth and `registry sync` catches up.
func (r *Registry) Publish(ctx context.Context, model, dir string) (Version, error) {
	if err := ValidateName("model", model); err != nil {
		return Version{}, err
	}
	m, err := checkpoint.Read(dir)
	if err != nil {
		return Version{}, fmt.Errorf("publish %s: refusing %s: %w", model, dir, err)
	}
	digest := m.Digest()
	before, err := r.Versions(ctx, model)
	if errors.Is(err, ErrNoStore) {
		before, err = nil, nil // the first publish creates a file:// store
	}
	if err != nil {
		return Version{}, fmt.Errorf("publish %s: %w", model, err)
	}
	for _, v := range before {
		if v.Digest == digest {
			v.Existing = true
			r.log.Info("already published", "version", v.Ref(), "digest", digest[:12])
			r.mirrorAfterPublish(ctx, v, before)
			return v, nil
		}
	}
	n, err := r.claimNumber(ctx, model, digest)
	if err != nil {
		return Version{}, fmt.Errorf("publish %s: %w", model, err)
	}
	v, err := r.upload(ctx, model, n, dir, m)
	if err != nil {
		return Version{}, fmt.Errorf("publish %s@%d: %w (no version was created; rerun to retry)", model, n, err)
	}
	r.log.Info("published", "version", v.Ref(), "uri", v.URI, "digest", digest[:12], "existing", v.Existing)
	r.mirrorAfterPublish(ctx, v, before)
	return v, nil
}

// claimNumber takes the next free version number with a create-if-absent claim object. A
// number claimed earlier by the same checkpoint but never completed is taken over.
func (r *Registry) claimNumber(ctx context.Context, model, digest string) (int, error) {
	numbers, err := r.claimed(ctx, model)
	if errors.Is(err, ErrNoStore) {
		numbers, err = nil, nil
	}
	if err != nil {
		return 0, err
	}
	for _, n := range numbers {
		if _, err := r.version(ctx, model, n); !errors.Is(err, ErrNotFound) {
			continue
		}
		if c, err := r.readClaim(ctx, model, n); err == nil && c.Digest == digest {
			r.log.Info("resuming an unfinished publish", "version", fmt.Sprintf("%s@%d", model, n))
			return n, nil
		}
	}
	n := 1
	if len(numbers) > 0 {
		n = numbers[len(numbers)-1] + 1
	}
	host, _ := os.Hostname()
	data, _ := json.Marshal(claim{Digest: digest, Host: host, PID: os.Getpid(), Time: time.Now().UTC()})
	for {
		err := r.store.Create(ctx, versionPrefix(model, n)+claimFile, bytes.NewReader(data), int64(len(data)))
		if err == nil {
			return n, nil
		}
		if !errors.Is(err, ErrExists) {
			return 0, fmt.Errorf("claim version %d: %w", n, err)
		}
		if c, err := r.readClaim(ctx, model, n); err == nil && c.Digest == digest {
			return n, nil // a concurrent publisher of the same checkpoint: share the number
		}
		n++
	}
}

func (r *Registry) readClaim(ctx context.Context, model string, n int) (claim, error) {
	data, err := r.read(ctx, versionPrefix(model, n)+claimFile)
	if err != nil {
		return claim{}, err
	}
	var c claim
	err = json.Unmarshal(data, &c)
	return c, err
}

// upload writes the checkpoint's files, then its manifest, into version n.
func (r *Registry) upload(ctx context.Context, model string, n int, dir string, m checkpoint.Manifest) (Version, error) {
	prefix := versionPrefix(model, n)
	for _, f := range m.Files {
		if err := r.uploadFile(ctx, prefix+f.Path, filepath.Join(dir, filepath.FromSlash(f.Path)), f); err != nil {
			return Version{}, err
		}
	}
	if r.beforeManifest != nil {
		r.beforeManifest()
	}
	data, err := m.Encode()
	if err != nil {
		return Version{}, err
	}
	key := prefix + checkpoint.ManifestFile
	err = r.store.Create(ctx, key, bytes.NewReader(data), int64(len(data)))
	if errors.Is(err, ErrExists) {
		// A concurrent publisher of the same checkpoint finished first.
		v, verr := r.version(ctx, model, n)
		if verr == nil && v.Digest == m.Digest() {
			v.Existing = true
			return v, nil
		}
		return Version{}, fmt.Errorf("%s: written by another publisher", r.store.URI(key))
	}
	if err != nil {
		return Version{}, err
	}
	return Version{Model: model, Number: n, Manifest: m, Digest: m.Digest(), URI: r.store.URI(prefix)}, nil
}

// uploadFile creates key from the local file; an object left by an unfinished publish of the
// same checkpoint is kept when its bytes match.
func (r *Registry) uploadFile(ctx context.Context, key, local string, f checkpoint.File) error {
	fh, err := os.Open(local)
	if err != nil {
		return err
	}
	defer fh.Close()
	err = r.store.Create(ctx, key, fh, f.Size)
	if !errors.Is(err, ErrExists) {
		return err
	}
	rc, err := r.store.Get(ctx, key)
	if err != nil {
		return err
	}
	defer rc.Close()
	if err := verifyStream(io.Discard, rc, r.store.URI(key), f); err != nil {
		return fmt.Errorf("an earlier object is in the way: %w", err)
	}
	return nil
}

// verifyStream copies src to dst and checks size and sha256 against f; errors name uri.
func verifyStream(dst io.Writer, src io.Reader, uri string, f checkpoint.File) error {
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(dst, h), src)
	if err != nil {
		return fmt.Errorf("download %s: %w", uri, err)
	}
	if n != f.Size {
		return fmt.Errorf("%s: size %d, manifest says %d", uri, n, f.Size)
	}
	if sum := hex.EncodeToString(h.Sum(nil)); sum != f.SHA256 {
		return fmt.Errorf("%s: sha256 %s, manifest says %s (corrupted object)", uri, sum, f.SHA256)
	}
	return nil
}

// Pull downloads the version ref names into dest (which must not exist unless force),
// verifying every file's sha256 against the manifest; dest appears only when all are good.
func (r *Registry) Pull(ctx context.Context, ref, dest string, force bool) (Version, error) {
	v, err := r.Resolve(ctx, ref)
	if err != nil {
		return Version{}, err
	}
	d, err := atomicfile.CreateDir(dest, force)
	if err != nil {
		return Version{}, err
	}
	defer d.Abort()
	prefix := versionPrefix(v.Model, v.Number)
	for _, f := range v.Manifest.Files {
		if err := r.pullFile(ctx, prefix+f.Path, filepath.Join(d.Tmp, filepath.FromSlash(f.Path)), f); err != nil {
			return Version{}, fmt.Errorf("pull %s: %w", v.Ref(), err)
		}
	}
	data, err := v.Manifest.Encode()
	if err != nil {
		return Version{}, err
	}
	if err := os.WriteFile(filepath.Join(d.Tmp, checkpoint.ManifestFile), data, 0o644); err != nil {
		return Version{}, err
	}
	if err := d.Commit(); err != nil {
		return Version{}, err
	}
	r.log.Info("pulled", "version", v.Ref(), "to", dest, "files", len(v.Manifest.Files))
	return v, nil
}

func (r *Registry) pullFile(ctx context.Context, key, local string, f checkpoint.File) error {
	rc, err := r.store.Get(ctx, key)
	if err != nil {
		return err
	}
	defer rc.Close()
	if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
		return err
	}
	out, err := os.Create(local)
	if err != nil {
		return err
	}
	defer out.Close()
	if err := verifyStream(out, rc, r.store.URI(key), f); err != nil {
		return err
	}
	return out.Close()
}
