package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/schedrl/schedrl/internal/checkpoint"
	"github.com/schedrl/schedrl/registry/mlflow"
)

// MLflow tags that tie a mirrored model version to the store.
const (
	TagVersion = "schedrl.version" // the store's version number
	TagURI     = "schedrl.uri"     // the version's folder in the store
	TagDigest  = "schedrl.digest"  // checkpoint digest
)

// mirrorFile marks a version whose mirroring is in progress, so that concurrent publishers
// catching up do not register it twice. Markers older than staleMirror are taken over.
const (
	mirrorFile  = ".mirror"
	staleMirror = 2 * time.Minute
)

// SyncReport says what Sync did.
type SyncReport struct {
	Models   int // models looked at
	Mirrored int // versions newly registered in MLflow
}

// Sync brings the MLflow mirror up to date with the store: every version missing in MLflow is
// registered (run, params, metrics, tags, model version) and every alias is set.
func (r *Registry) Sync(ctx context.Context) (SyncReport, error) {
	var rep SyncReport
	if r.mirror == nil {
		return rep, errors.New("registry sync: no MLflow tracking server configured (registry.tracking.uri)")
	}
	models, err := r.Models(ctx)
	if err != nil {
		return rep, err
	}
	var errs []error
	for _, model := range models {
		n, err := r.mirrorModel(ctx, model, nil)
		rep.Models++
		rep.Mirrored += n
		if err != nil {
			errs = append(errs, fmt.Errorf("model %s: %w", model, err))
		}
	}
	r.log.Info("mlflow sync", "tracking", r.mirror.URI(), "models", rep.Models, "mirrored", rep.Mirrored)
	return rep, errors.Join(errs...)
}

// mirrorAfterPublish mirrors v and catches up the versions that were visible before the
// publish started; failures are logged only.
func (r *Registry) mirrorAfterPublish(ctx context.Context, v Version, before []Version) {
	if r.mirror == nil {
		return
	}
	versions := append(slices.Clone(before), v)
	if _, err := r.mirrorModel(ctx, v.Model, versions); err != nil {
		r.log.Warn("mlflow mirror failed; the version is in the store, run `schedrl registry sync` later",
			"version", v.Ref(), "tracking", r.mirror.URI(), "err", err)
	}
}

// mirrorModel registers those of versions (nil: all of model's) that MLflow lacks, then sets
// the model's aliases, and returns how many it registered.
func (r *Registry) mirrorModel(ctx context.Context, model string, versions []Version) (int, error) {
	if versions == nil {
		var err error
		if versions, err = r.Versions(ctx, model); err != nil {
			return 0, err
		}
	}
	existing, err := r.mirror.SearchModelVersions(ctx, fmt.Sprintf("name='%s'", model))
	if err != nil {
		return 0, err
	}
	mirrored := map[int]string{} // store version -> MLflow version (the oldest, if repeated)
	for _, mv := range existing {
		n, err := strconv.Atoi(mv.TagValue(TagVersion))
		if err != nil {
			continue
		}
		if old, ok := mirrored[n]; !ok || atoi(mv.Version) < atoi(old) {
			mirrored[n] = mv.Version
		}
	}
	count := 0
	for _, v := range versions {
		if _, ok := mirrored[v.Number]; ok || !r.takeMirror(ctx, v) {
			continue
		}
		mv, err := r.mirrorVersion(ctx, v)
		r.store.Delete(context.WithoutCancel(ctx), versionPrefix(v.Model, v.Number)+mirrorFile)
		if err != nil {
			return count, fmt.Errorf("mirror %s: %w", v.Ref(), err)
		}
		mirrored[v.Number] = mv.Version
		count++
		r.log.Info("mirrored to mlflow", "version", v.Ref(), "mlflow_version", mv.Version)
	}
	aliases, err := r.Aliases(ctx, model)
	if err != nil {
		return count, err
	}
	for _, alias := range slices.Sorted(maps.Keys(aliases)) {
		want, ok := mirrored[aliases[alias]]
		if !ok {
			continue
		}
		if cur, err := r.mirror.ByAlias(ctx, model, alias); err == nil && cur.Version == want {
			continue
		}
		if err := r.mirror.SetAlias(ctx, model, alias, want); err != nil {
			return count, fmt.Errorf("alias %s: %w", alias, err)
		}
	}
	return count, nil
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

// takeMirror claims the right to mirror v; false when another publisher is doing it.
func (r *Registry) takeMirror(ctx context.Context, v Version) bool {
	key := versionPrefix(v.Model, v.Number) + mirrorFile
	data, _ := json.Marshal(map[string]time.Time{"started": time.Now().UTC()})
	err := r.store.Create(ctx, key, bytes.NewReader(data), int64(len(data)))
	if err == nil {
		return true
	}
	if !errors.Is(err, ErrExists) {
		r.log.Warn("cannot mark mirroring in progress", "version", v.Ref(), "err", err)
		return false
	}
	var rec map[string]time.Time
	if old, err := r.read(ctx, key); err != nil || json.Unmarshal(old, &rec) != nil || time.Since(rec["started"]) < staleMirror {
		return false
	}
	return r.store.Put(ctx, key, bytes.NewReader(data), int64(len(data))) == nil
}

// mirrorVersion creates v's run (params, metrics, curves, tags) and registered model version.
func (r *Registry) mirrorVersion(ctx context.Context, v Version) (mlflow.ModelVersion, error) {
	c := r.mirror
	exp, err := c.EnsureExperiment(ctx, r.experiment+"/"+v.Model)
	if err != nil {
		return mlflow.ModelVersion{}, err
	}
	m := v.Manifest
	tags := []mlflow.Tag{
		{Key: TagVersion, Value: strconv.Itoa(v.Number)}, {Key: TagURI, Value: v.URI}, {Key: TagDigest, Value: v.Digest},
	}
	runTags := append(slices.Clone(tags), mlflow.Tag{Key: "schedrl.model", Value: v.Model})
	if m.CodeRevision != "" {
		runTags = append(runTags, mlflow.Tag{Key: "mlflow.source.git.commit", Value: m.CodeRevision})
	}
	run, err := c.CreateRun(ctx, exp, v.Ref(), m.Created, runTags)
	if err != nil {
		return mlflow.ModelVersion{}, err
	}
	if err := c.LogBatch(ctx, run.Info.RunID, runMetrics(m.Metrics, m.History, m.Created), runParams(v), nil); err != nil {
		return mlflow.ModelVersion{}, err
	}
	// The version's source is where MLflow's "download" finds its files: the store itself
	// when it is S3, else (MLflow refuses local paths) a copy uploaded as the run's artifacts.
	source := v.URI
	if strings.HasPrefix(source, "file:") {
		if source, err = r.uploadVersion(ctx, run.Info.ArtifactURI, v); err != nil {
			return mlflow.ModelVersion{}, err
		}
	}
	if err := c.FinishRun(ctx, run.Info.RunID, time.Now()); err != nil {
		return mlflow.ModelVersion{}, err
	}
	if err := c.EnsureRegisteredModel(ctx, v.Model); err != nil {
		return mlflow.ModelVersion{}, err
	}
	return c.CreateModelVersion(ctx, v.Model, source, run.Info.RunID, tags)
}

// artifactFolder is the folder of a run's artifacts that holds the uploaded version.
const artifactFolder = "model"

// uploadVersion copies v's files and manifest from the store into the run's artifact folder
// and returns that folder's URI.
func (r *Registry) uploadVersion(ctx context.Context, artifactURI string, v Version) (string, error) {
	prefix := versionPrefix(v.Model, v.Number)
	paths := []string{checkpoint.ManifestFile}
	for _, f := range v.Manifest.Files {
		paths = append(paths, f.Path)
	}
	for _, p := range paths {
		data, err := r.read(ctx, prefix+p)
		if err != nil {
			return "", err
		}
		if err := r.mirror.UploadArtifact(ctx, artifactURI, artifactFolder+"/"+p, data); err != nil {
			return "", fmt.Errorf("upload %s: %w", p, err)
		}
	}
	return strings.TrimRight(artifactURI, "/") + "/" + artifactFolder, nil
}

func runParams(v Version) []mlflow.Param {
	m := v.Manifest
	params := []mlflow.Param{
		{Key: "model", Value: m.Model}, {Key: "env", Value: m.Env},
		{Key: "feature_version", Value: strconv.Itoa(m.FeatureVersion)},
	}
	for k, val := range map[string]string{"dataset_hash": m.DatasetHash, "config_hash": m.ConfigHash, "code_revision": m.CodeRevision, "parent": m.Parent} {
		if val != "" {
			params = append(params, mlflow.Param{Key: k, Value: val})
		}
	}
	// Through JSON, so that struct values flatten like the maps a read manifest holds.
	var hyper map[string]any
	if data, err := json.Marshal(m.Hyper); err == nil && json.Unmarshal(data, &hyper) == nil {
		params = append(params, flatParams("hyper", hyper)...)
	}
	slices.SortFunc(params, func(a, b mlflow.Param) int { return strings.Compare(a.Key, b.Key) })
	return params
}

// flatParams turns nested hyper-parameters into one MLflow param per leaf, keys joined by
// ".": hyper.arch.encoder_layers=2. Lists are JSON, numbers as JSON writes them.
func flatParams(prefix string, v any) []mlflow.Param {
	if m, ok := v.(map[string]any); ok {
		var out []mlflow.Param
		for _, k := range slices.Sorted(maps.Keys(m)) {
			out = append(out, flatParams(prefix+"."+k, m[k])...)
		}
		return out
	}
	if s, ok := v.(string); ok {
		return []mlflow.Param{{Key: prefix, Value: s}}
	}
	data, err := json.Marshal(v)
	if err != nil {
		return []mlflow.Param{{Key: prefix, Value: fmt.Sprint(v)}}
	}
	return []mlflow.Param{{Key: prefix, Value: string(data)}}
}

// runMetrics logs curves at their steps and each final metric after its curve's last step,
// so MLflow's "latest value" is the checkpoint's metric.
func runMetrics(final map[string]float64, history map[string][]checkpoint.Step, at time.Time) []mlflow.Metric {
	ts := mlflow.Millis(at)
	var out []mlflow.Metric
	last := map[string]int64{}
	for _, k := range slices.Sorted(maps.Keys(history)) {
		for _, s := range history[k] {
			out = append(out, mlflow.Metric{Key: k, Value: s.Value, Step: s.Step, Timestamp: ts})
			last[k] = max(last[k], s.Step+1)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(final)) {
		out = append(out, mlflow.Metric{Key: k, Value: final[k], Step: last[k], Timestamp: ts})
	}
	return out
}
