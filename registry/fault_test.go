package registry

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/schedrl/schedrl/internal/checkpoint"
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

// An endpoint that accepts and never answers fails an interactive read after one stall
// deadline: a timeout is not retried, since a silent endpoint stays silent.
func TestSilentS3EndpointFailsWithinDeadline(t *testing.T) {
	f := fault(t, testserver.StartSilent)
	r := faultyS3(t, f.Addr)
	err := bounded(t, 20*time.Second, func() error { _, err := r.Models(context.Background()); return err })
	wantError(t, err, "s3 list", "endpoint "+f.Addr, "no progress within 300ms", "not retried")
	if strings.Contains(err.Error(), "attempts") {
		t.Errorf("a stalled list was retried: %v", err)
	}
	if n := f.Conns.Load(); n != 1 {
		t.Errorf("%d connections for a stalled list, want 1", n)
	}
}

// A transfer that takes many times the stall deadline succeeds while its bytes keep moving:
// the deadline bounds the gaps, not the whole transfer.
func TestSlowS3TransferWhileBytesMove(t *testing.T) {
	cfg := s3Config(t, false)
	r := open(t, cfg)
	dir := makeCheckpoint(t, 61)
	big := bytes.Repeat([]byte("schedrl-"), 128<<10) // 1 MiB
	if err := os.WriteFile(filepath.Join(dir, "big.bin"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, checkpoint.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	m, err := checkpoint.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, checkpoint.ManifestFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := checkpoint.Write(dir, m); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Publish(context.Background(), "slow", dir); err != nil {
		t.Fatal(err)
	}
	// 32 KiB every 50 ms from MinIO to the client: 1 MiB takes over 1.5 s.
	slow := trickleProxy(t, minioSrv.Endpoint, 32<<10, 50*time.Millisecond)
	cfg.S3.Endpoint, cfg.S3.Timeout = slow, 500*time.Millisecond
	rs := open(t, cfg)
	start := time.Now()
	if _, err := rs.Pull(context.Background(), "slow@1", filepath.Join(t.TempDir(), "pulled"), false); err != nil {
		t.Fatalf("pull through a slow link: %v", err)
	}
	t.Logf("pull through a slow link with a 500ms stall deadline: %v", time.Since(start).Round(time.Millisecond))
}

// trickleProxy forwards loopback connections to addr, passing the answers on in pieces of
// chunk bytes with a pause after each: a slow link whose bytes keep moving.
func trickleProxy(t *testing.T, addr string, chunk int, pause time.Duration) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", addr)
			if err != nil {
				c.Close()
				continue
			}
			go func() { io.Copy(up, c); up.Close() }()
			go func() {
				defer c.Close()
				buf := make([]byte, chunk)
				for {
					n, err := up.Read(buf)
					if n > 0 {
						if _, werr := c.Write(buf[:n]); werr != nil {
							return
						}
						time.Sleep(pause)
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func TestS3CreateIsNotRetried(t *testing.T) {
	f := fault(t, testserver.StartSilent)
	r := faultyS3(t, f.Addr)
	err := bounded(t, 20*time.Second, func() error {
		return r.store.Create(context.Background(), "models/m/1/.claim", strings.NewReader("x"), 1)
	})
	wantError(t, err, "s3 create", "endpoint "+f.Addr, "no progress within")
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
