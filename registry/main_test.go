package registry

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/schedrl/schedrl/internal/checkpoint"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/internal/syncbuf"
	"github.com/schedrl/schedrl/internal/testserver"
)

// One MinIO and one MLflow for the whole package: starting MLflow takes seconds.
var (
	minioSrv  *testserver.MinIO
	mlflowSrv *testserver.MLflow
	logs      syncbuf.Buffer // every test registry logs here; TestNoSecretsAnywhere greps it
	bucketSeq atomic.Int64
)

const testToken = "tok-9f2c1d7e55aa" // sent to MLflow as a bearer token; must never be shown

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		childPublish()
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	if minioSrv, err = testserver.StartMinIO(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer minioSrv.Close()
	if mlflowSrv, err = testserver.StartMLflow(minioSrv, "mlflow-artifacts"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer mlflowSrv.Close()
	return m.Run()
}

func testLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// s3Config is a registry config for a fresh bucket of the test MinIO, optionally mirrored.
func s3Config(t testing.TB, mirror bool) config.RegistryConfig {
	t.Helper()
	bucket := fmt.Sprintf("reg-%d", bucketSeq.Add(1))
	if err := minioSrv.MakeBucket(bucket); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default().Registry
	cfg.Store = "s3://" + bucket + "/team"
	cfg.S3.Endpoint = minioSrv.Endpoint
	cfg.S3.AccessKey, cfg.S3.SecretKey = minioSrv.AccessKey, minioSrv.SecretKey
	if mirror {
		cfg.Tracking.URI = mlflowSrv.URI
		cfg.Tracking.Token = testToken
		cfg.Tracking.Experiment = "test-" + bucket
		cfg.Tracking.Retries = 2
		cfg.Tracking.Backoff = 50 * time.Millisecond
		cfg.Tracking.Timeout = 5 * time.Second
	}
	return cfg
}

func fileConfig(t *testing.T) config.RegistryConfig {
	cfg := config.Default().Registry
	cfg.Store = "file://" + t.TempDir()
	return cfg
}

func open(t *testing.T, cfg config.RegistryConfig) *Registry {
	t.Helper()
	r, err := Open(cfg, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// makeCheckpoint writes a checkpoint whose content depends on seed: model.ot, a PNG plot
// under report/, and a manifest with metrics.
func makeCheckpoint(t *testing.T, seed int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), fmt.Sprintf("ckpt-%d", seed))
	if err := os.MkdirAll(filepath.Join(dir, "report"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, checkpoint.ModelFile), bytes.Repeat([]byte{byte(seed), 7, 1}, 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	img := image.NewRGBA(image.Rect(0, 0, 40, 20))
	for x := range 40 {
		img.Set(x, 10+seed%10-5, color.RGBA{200, 30, 30, 255})
	}
	var png1 bytes.Buffer
	if err := png.Encode(&png1, img); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "report", "frag.png"), png1.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := checkpoint.Write(dir, checkpoint.Manifest{
		Model: "attention-policy", Hyper: map[string]any{"hidden": 64, "heads": 4, "lr": 0.0003 * float64(1+seed%3)},
		Env: "defrag", FeatureVersion: 1, DatasetHash: fmt.Sprintf("ds%04d", seed), ConfigHash: "cfg01",
		CodeRevision: "rev" + fmt.Sprint(seed),
		Metrics:      map[string]float64{"frag_reduction": 0.1 + float64(seed)/100, "alloc_ratio": 0.9},
		History:      map[string][]checkpoint.Step{"loss": {{Step: 0, Value: 1}, {Step: 1, Value: 0.5}}},
		Created:      time.Date(2026, 12, 1, 10, seed%60, 0, 0, time.UTC),
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}
