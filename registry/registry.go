// Package registry publishes checkpoints as immutable, numbered versions in an object store
// (a local folder or S3/MinIO), resolves and pulls them with sha256 verification, moves
// aliases such as "champion", mirrors everything to MLflow when configured, and serves a small
// web page to browse it all.
//
// Layout under the store: models/NAME/N/{model.ot,report/...,manifest.json} for version N,
// models/NAME/N/.claim (who took number N, written first), models/NAME/aliases/ALIAS.json. A
// version exists once its manifest.json exists; the manifest is always written last. A number
// whose manifest never came (a publish killed mid-upload) is removed, claim and objects, once
// its claim is older than StaleAge (by the next publish or by GC), and taken again.
package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/schedrl/schedrl/internal/checkpoint"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/registry/mlflow"
)

// Registry is a model registry over one object store, optionally mirrored to MLflow.
type Registry struct {
	store      Backend
	mirror     *mlflow.Client // nil: no MLflow mirror
	experiment string
	log        *slog.Logger

	staleAge      time.Duration // unfinished publishes older than this are removed (StaleAge)
	serveTimeouts ServeTimeouts // of Serve's HTTP server (DefaultServeTimeouts)

	beforeManifest func()                                  // test hook: runs after the files are uploaded, before the manifest
	uploadReader   func(key string, r io.Reader) io.Reader // test hook: wraps each uploaded file
}

// Version is one published checkpoint version.
type Version struct {
	Model    string
	Number   int
	Manifest checkpoint.Manifest
	Digest   string   // Manifest.Digest(): same checkpoint, same digest
	Aliases  []string // aliases pointing at this version
	URI      string   // the version's folder in the store
	Existing bool     // set by Publish when the checkpoint was already published
}

// Ref names the version as MODEL@N.
func (v Version) Ref() string { return fmt.Sprintf("%s@%d", v.Model, v.Number) }

// Open opens the registry of cfg.Store, with an MLflow mirror when cfg.Tracking.URI is set.
func Open(cfg config.RegistryConfig, log *slog.Logger) (*Registry, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("registry config: %w", err)
	}
	store, err := OpenBackend(cfg)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	r := &Registry{store: store, experiment: cfg.Tracking.Experiment, log: log, staleAge: StaleAge, serveTimeouts: DefaultServeTimeouts}
	if cfg.Tracking.URI != "" {
		r.mirror = mlflow.New(cfg.Tracking, log)
	}
	return r, nil
}

var (
	nameRE   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
	numberRE = regexp.MustCompile(`^[0-9]+$`)
)

const maxNameLen = 100

// ValidateName checks a model or alias name: letters, digits, '.', '_', '-', starting with a
// letter or digit, at most 100 bytes, no "..".
func ValidateName(kind, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%s name: empty", kind)
	case len(name) > maxNameLen:
		return fmt.Errorf("%s name %.20q...: longer than %d bytes", kind, name, maxNameLen)
	case strings.Contains(name, ".."), !nameRE.MatchString(name):
		return fmt.Errorf("%s name %q: use letters, digits, '.', '_' and '-' (no '/', no '..')", kind, name)
	case kind == "alias" && (numberRE.MatchString(name) || name == "latest"):
		return fmt.Errorf("alias name %q: would be read as a version", name)
	}
	return nil
}

func versionPrefix(model string, n int) string { return fmt.Sprintf("models/%s/%d/", model, n) }
func aliasKey(model, alias string) string {
	return fmt.Sprintf("models/%s/aliases/%s.json", model, alias)
}

// Models lists the model names in the store.
func (r *Registry) Models(ctx context.Context) ([]string, error) {
	names, err := r.store.List(ctx, "models/")
	if err != nil {
		return nil, err
	}
	var models []string
	for _, n := range names {
		if m, ok := strings.CutSuffix(n, "/"); ok && ValidateName("model", m) == nil {
			models = append(models, m)
		}
	}
	return models, nil
}

// Broken is a version whose manifest exists but cannot be read or parsed: it is reported
// and left out, so that one bad version does not hide every other.
type Broken struct {
	Model  string
	Number int
	Err    error
}

// Ref names the version as MODEL@N.
func (b Broken) Ref() string { return fmt.Sprintf("%s@%d", b.Model, b.Number) }

// Versions lists the readable versions of model, oldest first, with their aliases; broken
// ones are logged as warnings and left out (Scan returns them).
func (r *Registry) Versions(ctx context.Context, model string) ([]Version, error) {
	out, broken, err := r.Scan(ctx, model)
	for _, b := range broken {
		r.log.Warn("unreadable version left out", "version", b.Ref(), "err", b.Err)
	}
	return out, err
}

// Scan lists model's readable versions, oldest first, with their aliases, and its broken
// ones. Errors are those of the store itself (unreachable, missing), not of one version.
func (r *Registry) Scan(ctx context.Context, model string) ([]Version, []Broken, error) {
	if err := ValidateName("model", model); err != nil {
		return nil, nil, err
	}
	numbers, err := r.claimed(ctx, model)
	if err != nil {
		return nil, nil, err
	}
	aliases, err := r.Aliases(ctx, model)
	if err != nil {
		return nil, nil, err
	}
	var out []Version
	var broken []Broken
	for _, n := range numbers {
		v, err := r.version(ctx, model, n)
		if errors.Is(err, ErrNotFound) {
			continue // claimed, never completed: not a version
		}
		var bad *badManifestError
		if errors.As(err, &bad) {
			broken = append(broken, Broken{Model: model, Number: n, Err: err})
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		for alias, an := range aliases {
			if an == n {
				v.Aliases = append(v.Aliases, alias)
			}
		}
		slices.Sort(v.Aliases)
		out = append(out, v)
	}
	return out, broken, nil
}

// badManifestError: a version's manifest was read but is not a valid manifest.
type badManifestError struct{ err error }

func (e *badManifestError) Error() string { return e.err.Error() }
func (e *badManifestError) Unwrap() error { return e.err }

// claimed returns every version number taken under model, complete or not, ascending.
func (r *Registry) claimed(ctx context.Context, model string) ([]int, error) {
	names, err := r.store.List(ctx, "models/"+model+"/")
	if err != nil {
		return nil, err
	}
	var numbers []int
	for _, name := range names {
		if s, ok := strings.CutSuffix(name, "/"); ok && numberRE.MatchString(s) {
			if n, err := strconv.Atoi(s); err == nil && n > 0 {
				numbers = append(numbers, n)
			}
		}
	}
	slices.Sort(numbers)
	return numbers, nil
}

// version reads one version's manifest; ErrNotFound when it has none (yet).
func (r *Registry) version(ctx context.Context, model string, n int) (Version, error) {
	key := versionPrefix(model, n) + checkpoint.ManifestFile
	data, err := r.read(ctx, key)
	if err != nil {
		return Version{}, err
	}
	m, err := checkpoint.Parse(data)
	if err != nil {
		return Version{}, &badManifestError{fmt.Errorf("%s: %w", r.store.URI(key), err)}
	}
	return Version{Model: model, Number: n, Manifest: m, Digest: m.Digest(), URI: r.store.URI(versionPrefix(model, n))}, nil
}

func (r *Registry) read(ctx context.Context, key string) ([]byte, error) {
	rc, err := r.store.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", r.store.URI(key), err)
	}
	return data, nil
}

// Resolve finds the version a reference names: MODEL@N, MODEL@ALIAS, MODEL@latest or MODEL.
func (r *Registry) Resolve(ctx context.Context, ref string) (Version, error) {
	model, sel, _ := strings.Cut(ref, "@")
	if err := ValidateName("model", model); err != nil {
		return Version{}, fmt.Errorf("reference %q: %w", ref, err)
	}
	versions, broken, err := r.Scan(ctx, model)
	if err != nil {
		return Version{}, err
	}
	if numberRE.MatchString(sel) {
		n, _ := strconv.Atoi(sel)
		for _, b := range broken {
			if b.Number == n {
				return Version{}, fmt.Errorf("reference %q: version %d is unreadable: %w", ref, n, b.Err)
			}
		}
	}
	if len(versions) == 0 {
		return Version{}, fmt.Errorf("reference %q: model %q has no versions in %s%s", ref, model, r.store.URI("models/"), r.Hint(model))
	}
	switch {
	case sel == "" || sel == "latest":
		return versions[len(versions)-1], nil
	case numberRE.MatchString(sel):
		n, _ := strconv.Atoi(sel)
		for _, v := range versions {
			if v.Number == n {
				return v, nil
			}
		}
		return Version{}, fmt.Errorf("reference %q: no version %d (latest is %d)", ref, n, versions[len(versions)-1].Number)
	}
	if err := ValidateName("alias", sel); err != nil {
		return Version{}, fmt.Errorf("reference %q: %w", ref, err)
	}
	for _, v := range versions {
		if slices.Contains(v.Aliases, sel) {
			return v, nil
		}
	}
	return Version{}, fmt.Errorf("reference %q: model %q has no alias %q", ref, model, sel)
}

type aliasRecord struct {
	Version int       `json:"version"`
	Set     time.Time `json:"set"`
}

// Aliases maps each alias of model to its version number.
func (r *Registry) Aliases(ctx context.Context, model string) (map[string]int, error) {
	names, err := r.store.List(ctx, "models/"+model+"/aliases/")
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, name := range names {
		alias, ok := strings.CutSuffix(name, ".json")
		if !ok || ValidateName("alias", alias) != nil {
			continue
		}
		data, err := r.read(ctx, aliasKey(model, alias))
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		var rec aliasRecord
		if err := json.Unmarshal(data, &rec); err != nil {
			// One bad alias must not hide the model: report it, keep the rest.
			r.log.Warn("unreadable alias left out", "alias", model+"@"+alias, "err", fmt.Errorf("%s: %w", r.store.URI(aliasKey(model, alias)), err))
			continue
		}
		out[alias] = rec.Version
	}
	return out, nil
}

// Promote points alias at the version ref names (moving it if it pointed elsewhere) and
// mirrors the alias to MLflow; a mirror failure is logged, and `registry sync` repairs it.
func (r *Registry) Promote(ctx context.Context, ref, alias string) (Version, error) {
	if err := ValidateName("alias", alias); err != nil {
		return Version{}, err
	}
	v, err := r.Resolve(ctx, ref)
	if err != nil {
		return Version{}, err
	}
	data, _ := json.Marshal(aliasRecord{Version: v.Number, Set: time.Now().UTC()})
	if err := r.store.Put(ctx, aliasKey(v.Model, alias), bytes.NewReader(data), int64(len(data))); err != nil {
		return Version{}, fmt.Errorf("promote %s to %s: %w", v.Ref(), alias, err)
	}
	if !slices.Contains(v.Aliases, alias) {
		v.Aliases = append(v.Aliases, alias)
	}
	r.log.Info("promoted", "version", v.Ref(), "alias", alias)
	if r.mirror != nil {
		if _, err := r.mirrorModel(ctx, v.Model, nil); err != nil {
			r.log.Warn("mlflow mirror failed; run `schedrl registry sync` later", "model", v.Model, "err", err)
		}
	}
	return v, nil
}

var (
	pipelineMu sync.RWMutex
	// pipelineConfigs names the pipeline config that publishes each of the models the
	// repository's pipelines create; each family's file registers its own.
	pipelineConfigs = map[string]string{}
)

// RegisterPipelineConfig records that the pipeline config cfg publishes model, for the hint a
// miss of model gives; model registered twice with different configs is a programming error.
func RegisterPipelineConfig(model, cfg string) {
	pipelineMu.Lock()
	defer pipelineMu.Unlock()
	if old, dup := pipelineConfigs[model]; dup && old != cfg {
		panic("registry: model " + model + " published by both " + old + " and " + cfg)
	}
	pipelineConfigs[model] = cfg
}

// PipelineConfig is the config whose pipeline publishes model, when it is one of the
// repository's pipelines' models.
func PipelineConfig(model string) (string, bool) {
	pipelineMu.RLock()
	defer pipelineMu.RUnlock()
	cfg, ok := pipelineConfigs[model]
	return cfg, ok
}

// Hint says what publishes model when it is one of the pipelines' models ("" otherwise).
func (r *Registry) Hint(model string) string {
	if cfg, ok := PipelineConfig(model); ok {
		return fmt.Sprintf(" (its pipeline has not published yet: run `make pipeline CONFIG=%s` first)", cfg)
	}
	return ""
}
