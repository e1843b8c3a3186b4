package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/registry/mlflow"
)

// mlflowGet reads the real MLflow server's REST API directly (not through our client), as
// the MLflow UI does.
func mlflowGet(t *testing.T, path string, q url.Values, out any) {
	t.Helper()
	resp, err := http.Get(mlflowSrv.URI + "/api/2.0/mlflow/" + path + "?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, data)
	}
	if err := json.Unmarshal(data, out); err != nil {
		t.Fatal(err)
	}
}

func mlflowVersions(t *testing.T, model string) []mlflow.ModelVersion {
	var got struct {
		ModelVersions []mlflow.ModelVersion `json:"model_versions"`
	}
	mlflowGet(t, "model-versions/search", url.Values{"filter": {fmt.Sprintf("name='%s'", model)}}, &got)
	return got.ModelVersions
}

// TestRoundTripMinIOAndMLflow is the acceptance round trip: publish, list, show, pull,
// promote against real MinIO; MLflow's REST API then shows the version, alias and metrics.
func TestRoundTripMinIOAndMLflow(t *testing.T) {
	ctx := context.Background()
	cfg := s3Config(t, true)
	r := open(t, cfg)
	start := time.Now()
	v1, err := r.Publish(ctx, "rt-model", makeCheckpoint(t, 1))
	if err != nil {
		t.Fatal(err)
	}
	v2, err := r.Publish(ctx, "rt-model", makeCheckpoint(t, 2))
	if err != nil {
		t.Fatal(err)
	}
	if list, err := r.Versions(ctx, "rt-model"); err != nil || len(list) != 2 {
		t.Fatalf("list: %d %v", len(list), err)
	}
	if v, err := r.Resolve(ctx, "rt-model@1"); err != nil || v.Digest != v1.Digest {
		t.Fatalf("show rt-model@1: %v", err)
	}
	if _, err := r.Pull(ctx, "rt-model@2", filepath.Join(t.TempDir(), "p"), false); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Promote(ctx, "rt-model@2", "champion"); err != nil {
		t.Fatal(err)
	}
	t.Logf("round trip (2 publishes, list, show, pull, promote, mirrored): %v", time.Since(start))

	mvs := mlflowVersions(t, "rt-model")
	if len(mvs) != 2 {
		t.Fatalf("MLflow has %d versions of rt-model, want 2: %+v", len(mvs), mvs)
	}
	var champ struct {
		ModelVersion mlflow.ModelVersion `json:"model_version"`
	}
	mlflowGet(t, "registered-models/alias", url.Values{"name": {"rt-model"}, "alias": {"champion"}}, &champ)
	mv := champ.ModelVersion
	if mv.TagValue(TagVersion) != "2" || mv.Source != v2.URI || !slices.Contains(mv.Aliases, "champion") {
		t.Fatalf("champion in MLflow: %+v, want store version 2 at %s", mv, v2.URI)
	}
	var run struct{ Run mlflow.Run }
	mlflowGet(t, "runs/get", url.Values{"run_id": {mv.RunID}}, &run)
	metrics := map[string]float64{}
	for _, m := range run.Run.Data.Metrics {
		metrics[m.Key] = m.Value
	}
	params := map[string]string{}
	for _, p := range run.Run.Data.Params {
		params[p.Key] = p.Value
	}
	tags := map[string]string{}
	for _, tg := range run.Run.Data.Tags {
		tags[tg.Key] = tg.Value
	}
	if math.Abs(metrics["frag_reduction"]-(0.1+2.0/100)) > 1e-12 || metrics["loss"] != 0.5 || params["dataset_hash"] != "ds0002" ||
		params["hyper.hidden"] != "64" || tags[TagURI] != v2.URI || run.Run.Info.Status != "FINISHED" {
		t.Fatalf("MLflow run: metrics %v params %v tags %v status %s", metrics, params, tags, run.Run.Info.Status)
	}
	var hist struct{ Metrics []mlflow.Metric }
	mlflowGet(t, "metrics/get-history", url.Values{"run_id": {mv.RunID}, "metric_key": {"loss"}}, &hist)
	if len(hist.Metrics) != 2 {
		t.Fatalf("loss curve in MLflow: %+v", hist.Metrics)
	}

	// Publishing again mirrors nothing new; a sync finds nothing to do.
	if _, err := r.Publish(ctx, "rt-model", makeCheckpoint(t, 2)); err != nil {
		t.Fatal(err)
	}
	if rep, err := r.Sync(ctx); err != nil || rep.Mirrored != 0 {
		t.Fatalf("sync after a complete mirror: %+v %v", rep, err)
	}
	if n := len(mlflowVersions(t, "rt-model")); n != 2 {
		t.Fatalf("MLflow has %d versions after republish, want 2", n)
	}
}

// TestConcurrentPublishersMirrorOnce: eight publishers at once register eight MLflow versions,
// none twice, even though each also catches up the versions it saw.
func TestConcurrentPublishersMirrorOnce(t *testing.T) {
	ctx := context.Background()
	cfg := s3Config(t, true)
	const n = 8
	dirs := make([]string, n)
	for i := range dirs {
		dirs[i] = makeCheckpoint(t, 30+i)
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { _, errs[i] = open(t, cfg).Publish(ctx, "conc", dirs[i]) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, mv := range mlflowVersions(t, "conc") {
		seen[mv.TagValue(TagVersion)]++
	}
	for i := 1; i <= n; i++ {
		if seen[fmt.Sprint(i)] != 1 {
			t.Fatalf("MLflow versions per store version: %v, want each of 1..%d once", seen, n)
		}
	}
}

// TestMLflowDownThenSync: with MLflow stopped publishes still land in the store; after
// MLflow is back, the next publish of a model catches its missed versions up, and Sync
// mirrors the rest.
func TestMLflowDownThenSync(t *testing.T) {
	ctx := context.Background()
	cfg := s3Config(t, true)
	r := open(t, cfg)
	t0 := time.Now()
	mlflowSrv.Stop()
	t.Logf("mlflow stopped in %v", time.Since(t0))
	restarted := false
	defer func() {
		if !restarted {
			mlflowSrv.Start()
		}
	}()
	v, err := r.Publish(ctx, "offline", makeCheckpoint(t, 1))
	if err != nil {
		t.Fatalf("publish with MLflow down: %v", err)
	}
	if _, err := r.Promote(ctx, v.Ref(), "champion"); err != nil {
		t.Fatalf("promote with MLflow down: %v", err)
	}
	if _, err := r.Publish(ctx, "offline-next", makeCheckpoint(t, 2)); err != nil {
		t.Fatalf("publish with MLflow down: %v", err)
	}
	if !strings.Contains(logs.String(), "registry sync") {
		t.Fatal("no warning pointing at `registry sync` was logged")
	}
	if _, err := r.Sync(ctx); err == nil {
		t.Fatal("sync with MLflow down reported success")
	}
	t0 = time.Now()
	if err := mlflowSrv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Logf("mlflow restarted in %v", time.Since(t0))
	restarted = true
	if _, err := r.Publish(ctx, "offline-next", makeCheckpoint(t, 3)); err != nil {
		t.Fatal(err)
	}
	if n, m := len(mlflowVersions(t, "offline-next")), len(mlflowVersions(t, "offline")); n != 2 || m != 0 {
		t.Fatalf("after the next publish MLflow has %d versions of offline-next (want 2, caught up) and %d of offline (want 0)", n, m)
	}
	rep, err := r.Sync(ctx)
	if err != nil || rep.Mirrored != 1 {
		t.Fatalf("sync: %+v %v", rep, err)
	}
	mvs := mlflowVersions(t, "offline")
	if len(mvs) != 1 || mvs[0].Source != v.URI {
		t.Fatalf("MLflow after sync: %+v", mvs)
	}
	var champ struct {
		ModelVersion mlflow.ModelVersion `json:"model_version"`
	}
	mlflowGet(t, "registered-models/alias", url.Values{"name": {"offline"}, "alias": {"champion"}}, &champ)
	if champ.ModelVersion.TagValue(TagVersion) != "1" {
		t.Fatalf("alias not synced: %+v", champ.ModelVersion)
	}
}

// TestMinIOStoppedMidPublish: MinIO dies after the files are up, before the manifest: the
// publish fails clearly, no version is visible, and a rerun completes the same version.
func TestMinIOStoppedMidPublish(t *testing.T) {
	ctx := context.Background()
	cfg := s3Config(t, false)
	r := open(t, cfg)
	dir := makeCheckpoint(t, 4)
	r.beforeManifest = minioSrv.Stop
	_, err := r.Publish(ctx, "faulty", dir)
	r.beforeManifest = nil
	if startErr := minioSrv.Start(); startErr != nil {
		t.Fatal(startErr)
	}
	if err == nil {
		t.Fatal("publish succeeded with MinIO stopped")
	}
	t.Logf("publish error: %v", err)
	if !strings.Contains(err.Error(), "manifest.json") || !strings.Contains(err.Error(), "no version was created") {
		t.Fatalf("unclear error: %v", err)
	}
	if list, err := r.Versions(ctx, "faulty"); err != nil || len(list) != 0 {
		t.Fatalf("after the failed publish: %d versions visible (%v)", len(list), err)
	}
	v, err := r.Publish(ctx, "faulty", dir)
	if err != nil {
		t.Fatalf("rerun: %v", err)
	}
	if v.Number != 1 {
		t.Fatalf("rerun got version %d, want the unfinished 1", v.Number)
	}
	if _, err := r.Pull(ctx, "faulty@1", filepath.Join(t.TempDir(), "p"), false); err != nil {
		t.Fatal(err)
	}
}

// TestNoSecretsAnywhere makes its own traffic, failures included, then greps everything the
// registry showed in this package's tests (log lines, errors, stored objects and manifests,
// config show) for the credentials.
func TestNoSecretsAnywhere(t *testing.T) {
	ctx := context.Background()
	cfg := s3Config(t, true)
	r := open(t, cfg)
	var shown []string
	v, err := r.Publish(ctx, "secrets", makeCheckpoint(t, 1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Promote(ctx, v.Ref(), "champion"); err != nil {
		t.Fatal(err)
	}
	// Failures: a wrong secret key, a dead MLflow, a dead endpoint.
	bad := cfg
	bad.S3.SecretKey = minioSrv.SecretKey + "x"
	if _, err := open(t, bad).Publish(ctx, "secrets", makeCheckpoint(t, 2)); err == nil {
		t.Fatal("publish with a wrong secret key succeeded")
	} else {
		shown = append(shown, err.Error())
	}
	dead := cfg
	dead.Tracking.URI = "http://127.0.0.1:1"
	if _, err := open(t, dead).Sync(ctx); err != nil {
		shown = append(shown, err.Error())
	}
	deadS3 := cfg
	deadS3.S3.Endpoint = "127.0.0.1:1"
	if _, err := open(t, deadS3).Versions(ctx, "secrets"); err != nil {
		shown = append(shown, err.Error())
	}
	all := config.Default()
	all.Registry = cfg
	yaml, err := config.Show(all)
	if err != nil {
		t.Fatal(err)
	}
	shown = append(shown, string(yaml), logs.String())
	// Every stored object, manifests and markers included.
	err = filepath.Walk(minioSrv.Dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && !strings.HasSuffix(p, ".log") {
			data, _ := os.ReadFile(p)
			shown = append(shown, string(data))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{minioSrv.SecretKey, minioSrv.AccessKey, testToken} {
		for _, s := range shown {
			if strings.Contains(s, secret) {
				t.Fatalf("secret %.4s... shown in: %.300s", secret, s)
			}
		}
	}
	if !strings.Contains(string(yaml), config.Redacted) {
		t.Fatalf("config show does not redact:\n%s", yaml)
	}
}
