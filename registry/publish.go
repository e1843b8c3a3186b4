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
	"strings"
	"time"

	"github.com/schedrl/schedrl/internal/atomicfile"
	"github.com/schedrl/schedrl/internal/checkpoint"
)

const claimFile = ".claim"

// StaleAge is how old an unfinished publish must be before a later publish or `registry gc`
// removes it: its claim, its uploaded objects and its temporaries. A publish runs for minutes
// at most, so a claim an hour old belongs to a publisher that was killed.
const StaleAge = time.Hour

// claim records which checkpoint took a version number, and who: a rerun of a failed publish
// of the same checkpoint resumes its number instead of leaving a gap, and a claim older than
// StaleAge whose version was never completed is garbage.
type claim struct {
	Digest string    `json:"digest"`
	Host   string    `json:"host"`
	PID    int       `json:"pid"`
	Time   time.Time `json:"time"`
}

// ErrClaimLost: another publish or a gc took the version number over while this publish
// uploaded (it was older than StaleAge); nothing of this publish became a version.
var ErrClaimLost = errors.New("claim taken over")

// Publish stores the checkpoint in dir as the next version of model and returns it. The
// directory must hold a valid checkpoint (manifest and matching files). Publishing a
// checkpoint that is already a version of model returns that version with Existing set.
// Unfinished publishes of model older than StaleAge are removed first, so their numbers are
// taken again.
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
	if _, err := r.collect(ctx, model, r.staleAge, false); err != nil && !errors.Is(err, ErrNoStore) {
		return Version{}, fmt.Errorf("publish %s: remove unfinished publishes: %w", model, err)
	}
	if tc, ok := r.store.(tempCleaner); ok {
		if _, err := tc.removeTemps("models/"+model+"/", r.staleAge, false); err != nil {
			return Version{}, fmt.Errorf("publish %s: remove temporaries: %w", model, err)
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

// claimNumber takes the lowest free version number above the newest complete version with a
// create-if-absent claim object. A number claimed earlier by the same checkpoint but never
// completed is taken over. Numbers are not taken below a complete version, so that the
// highest number stays the newest publish (`latest`).
func (r *Registry) claimNumber(ctx context.Context, model, digest string) (int, error) {
	numbers, err := r.claimed(ctx, model)
	if errors.Is(err, ErrNoStore) {
		numbers, err = nil, nil
	}
	if err != nil {
		return 0, err
	}
	n := 1
	taken := map[int]bool{}
	for _, k := range numbers {
		taken[k] = true
		_, err := r.version(ctx, model, k)
		if !errors.Is(err, ErrNotFound) {
			n = k + 1 // complete (or unreadable, which is not free either)
			continue
		}
		if c, err := r.readClaim(ctx, model, k); err == nil && c.Digest == digest {
			r.log.Info("resuming an unfinished publish", "version", fmt.Sprintf("%s@%d", model, k))
			return k, nil
		}
	}
	host, _ := os.Hostname()
	data, _ := json.Marshal(claim{Digest: digest, Host: host, PID: os.Getpid(), Time: time.Now().UTC()})
	for {
		if taken[n] {
			n++
			continue
		}
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

// holdsClaim checks, before the manifest makes version n visible, that n is still claimed for
// this checkpoint: a gc or a later publish may have removed the claim of a publish that
// stalled for longer than StaleAge.
func (r *Registry) holdsClaim(ctx context.Context, model string, n int, digest string) error {
	c, err := r.readClaim(ctx, model, n)
	switch {
	case errors.Is(err, ErrNotFound):
		return fmt.Errorf("%s: %w (removed as older than %v; publish again)", r.store.URI(versionPrefix(model, n)+claimFile), ErrClaimLost, r.staleAge)
	case err != nil:
		return fmt.Errorf("before %s: check the claim: %w", r.store.URI(versionPrefix(model, n)+checkpoint.ManifestFile), err)
	case c.Digest != digest:
		return fmt.Errorf("%s: %w by another checkpoint (pid %d on %s; publish again)", r.store.URI(versionPrefix(model, n)+claimFile), ErrClaimLost, c.PID, c.Host)
	}
	return nil
}

// Garbage is one unfinished publish that GC removed (or would remove).
type Garbage struct {
	Ref     string    // MODEL@N
	URI     string    // the version's folder
	Objects int       // objects under it, its claim included
	Claimed time.Time // when it was claimed; zero when its claim is gone or unreadable
	Host    string
	PID     int
}

// GC removes the unfinished publishes older than staleAge of every model: versions without a
// manifest (their claim and uploaded objects), and the store's temporaries (a file:// store's
// hidden files of writers that were killed). With dryRun it only reports them.
func (r *Registry) GC(ctx context.Context, staleAge time.Duration, dryRun bool) ([]Garbage, []string, error) {
	models, err := r.Models(ctx)
	if err != nil {
		return nil, nil, err
	}
	var all []Garbage
	for _, m := range models {
		g, err := r.collect(ctx, m, staleAge, dryRun)
		all = append(all, g...)
		if err != nil {
			return all, nil, err
		}
	}
	var temps []string
	if tc, ok := r.store.(tempCleaner); ok {
		if temps, err = tc.removeTemps("", staleAge, dryRun); err != nil {
			return all, temps, err
		}
	}
	return all, temps, nil
}

// tempCleaner is a store that keeps temporaries a killed writer can leave behind.
type tempCleaner interface {
	removeTemps(prefix string, olderThan time.Duration, dryRun bool) ([]string, error)
}

// collect removes model's unfinished publishes older than staleAge: a version folder without
// a manifest whose claim is older, or gone (the claim is written first, so a folder without
// one is what a removal or a writer that lost its claim left). The claim goes last, so that
// its number stays taken until the folder is empty.
func (r *Registry) collect(ctx context.Context, model string, staleAge time.Duration, dryRun bool) ([]Garbage, error) {
	numbers, err := r.claimed(ctx, model)
	if err != nil {
		return nil, err
	}
	var out []Garbage
	for _, n := range numbers {
		if _, err := r.version(ctx, model, n); !errors.Is(err, ErrNotFound) {
			continue
		}
		g := Garbage{Ref: fmt.Sprintf("%s@%d", model, n), URI: r.store.URI(versionPrefix(model, n))}
		if c, err := r.readClaim(ctx, model, n); err == nil {
			if time.Since(c.Time) < staleAge {
				continue // a publish in flight, or one too recent to call dead
			}
			g.Claimed, g.Host, g.PID = c.Time, c.Host, c.PID
		} else if !errors.Is(err, ErrNotFound) && !isBadClaim(err) {
			return out, err
		}
		keys, err := r.listAll(ctx, versionPrefix(model, n))
		if err != nil {
			return out, err
		}
		if len(keys) == 0 {
			continue // only a writer's temporary so far: removeTemps judges it by its age
		}
		g.Objects = len(keys)
		out = append(out, g)
		if dryRun {
			continue
		}
		claimKey := versionPrefix(model, n) + claimFile
		for _, k := range keys {
			if k == claimKey {
				continue
			}
			if err := r.store.Delete(ctx, k); err != nil {
				return out, fmt.Errorf("remove %s: %w", r.store.URI(k), err)
			}
		}
		// The folder's temporaries are the dead writer's: its claim is stale.
		if tc, ok := r.store.(tempCleaner); ok {
			if _, err := tc.removeTemps(versionPrefix(model, n), 0, false); err != nil {
				return out, err
			}
		}
		if err := r.store.Delete(ctx, claimKey); err != nil {
			return out, fmt.Errorf("remove %s: %w", r.store.URI(claimKey), err)
		}
		r.log.Info("removed an unfinished publish", "version", g.Ref, "objects", g.Objects, "claimed", g.Claimed, "pid", g.PID, "host", g.Host)
	}
	return out, nil
}

func isBadClaim(err error) bool {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	return errors.As(err, &syn) || errors.As(err, &typ)
}

// listAll returns every key under prefix, sub-folders included.
func (r *Registry) listAll(ctx context.Context, prefix string) ([]string, error) {
	names, err := r.store.List(ctx, prefix)
	if err != nil {
		return nil, err
	}
	var keys []string
	for _, name := range names {
		if strings.HasSuffix(name, "/") {
			sub, err := r.listAll(ctx, prefix+name)
			if err != nil {
				return nil, err
			}
			keys = append(keys, sub...)
			continue
		}
		keys = append(keys, prefix+name)
	}
	return keys, nil
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
	if err := r.holdsClaim(ctx, model, n, m.Digest()); err != nil {
		return Version{}, err
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
	var src io.Reader = fh
	if r.uploadReader != nil {
		src = r.uploadReader(key, src)
	}
	err = r.store.Create(ctx, key, src, f.Size)
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
