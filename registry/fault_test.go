package registry

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/internal/testserver"
	"github.com/schedrl/schedrl/registry/mlflow"
)

// Fault injection (issue 26 case 1): a silent endpoint and one that breaks off its answer
// make every call fail within its deadline, with an error naming the operation and the
// endpoint; idempotent calls are retried, the others are sent once.

func fault(t *testing.T, start func() (*testserver.Fault, error)) *testserver.Fault {
	t.Helper()
	f, err := start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return f
}

func faultyS3(t *testing.T, addr string) *Registry {
	cfg := config.Default().Registry
	cfg.Store = "s3://bucket/team"
	cfg.S3.Endpoint, cfg.S3.AccessKey, cfg.S3.SecretKey = addr, "ak", "sk"
	cfg.S3.Timeout, cfg.S3.Retries, cfg.S3.Backoff = 300*time.Millisecond, 1, 10*time.Millisecond
	return open(t, cfg)
}

// bounded runs call and fails the test if it does not return within limit: the hang the
// deadlines exist to prevent.
func bounded(t *testing.T, limit time.Duration, call func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- call() }()
	select {
	case err := <-done:
		return err
	case <-time.After(limit):
		t.Fatalf("no answer after %v: the call hangs", limit)
		return nil
	}
}

func wantError(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatal("no error")
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not say %q", err, p)
		}
	}
}

func TestSilentS3EndpointFailsWithinDeadline(t *testing.T) {
	f := fault(t, testserver.StartSilent)
	r := faultyS3(t, f.Addr)
	err := bounded(t, 20*time.Second, func() error { _, err := r.Models(context.Background()); return err })
	wantError(t, err, "s3 list", "endpoint "+f.Addr, "no answer within 300ms", "after 2 attempts")
	if n := f.Conns.Load(); n != 2 {
		t.Errorf("%d connections for an idempotent list with 1 retry, want 2", n)
	}
}

func TestS3CreateIsNotRetried(t *testing.T) {
	f := fault(t, testserver.StartSilent)
	r := faultyS3(t, f.Addr)
	err := bounded(t, 20*time.Second, func() error {
		return r.store.Create(context.Background(), "models/m/1/.claim", strings.NewReader("x"), 1)
	})
	wantError(t, err, "s3 create", "endpoint "+f.Addr, "no answer within")
	if n := f.Conns.Load(); n != 1 {
		t.Errorf("%d connections for a conditional create, want 1 (never retried)", n)
	}
}

func TestS3AnswerCutOffMidResponse(t *testing.T) {
	f := fault(t, testserver.StartCutOff)
	r := faultyS3(t, f.Addr)
	err := bounded(t, 20*time.Second, func() error {
		_, err := r.store.Get(context.Background(), "models/m/1/manifest.json")
		return err
	})
	wantError(t, err, "s3 get", "endpoint "+f.Addr, "after 2 attempts")
}

func faultyMLflow(addr string) *mlflow.Client {
	return mlflow.New(config.TrackingConfig{URI: "http://" + addr, Retries: 1, Backoff: 10 * time.Millisecond,
		Timeout: 300 * time.Millisecond}, testLogger())
}

func TestSilentMLflowEndpointFailsWithinDeadline(t *testing.T) {
	f := fault(t, testserver.StartSilent)
	c := faultyMLflow(f.Addr)
	err := bounded(t, 20*time.Second, func() error {
		_, err := c.SearchModelVersions(context.Background(), "name='m'")
		return err
	})
	wantError(t, err, "mlflow GET model-versions/search", "at http://"+f.Addr, "no answer within 300ms", "after 2 attempts")
	before := f.Conns.Load()
	err = bounded(t, 20*time.Second, func() error {
		_, err := c.CreateRun(context.Background(), "1", "run", time.Now(), nil)
		return err
	})
	wantError(t, err, "mlflow POST runs/create", "no answer within")
	if n := f.Conns.Load() - before; n != 1 {
		t.Errorf("%d connections for runs/create, want 1 (not idempotent)", n)
	}
}

func TestMLflowAnswerCutOffMidResponse(t *testing.T) {
	f := fault(t, testserver.StartCutOff)
	c := faultyMLflow(f.Addr)
	err := bounded(t, 20*time.Second, func() error {
		_, err := c.SearchModelVersions(context.Background(), "name='m'")
		return err
	})
	wantError(t, err, "mlflow GET model-versions/search", "at http://"+f.Addr, "unexpected EOF", "after 2 attempts")
}
