package mlflow

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/schedrl/schedrl/internal/config"
)

// flaky answers the first `failures` requests with status, then a registered model.
func flaky(t *testing.T, failures int32, status int, seenAuth *atomic.Value) (*httptest.Server, *atomic.Int32) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seenAuth.Store(r.Header.Get("Authorization"))
		if calls.Add(1) <= failures {
			w.WriteHeader(status)
			io.WriteString(w, `{"error_code": "TEMPORARILY_UNAVAILABLE", "message": "try later"}`)
			return
		}
		io.WriteString(w, `{"registered_model": {"name": "m"}}`)
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

func client(uri string, retries int, token, user, pass string) *Client {
	return New(config.TrackingConfig{URI: uri, Retries: retries, Backoff: time.Millisecond, Timeout: time.Second,
		Token: token, Username: user, Password: pass}, slog.New(slog.NewTextHandler(io.Discard, nil)))
}

// Idempotent calls (here setting an alias) are retried on 5xx and connection errors; a create is
// not, since a repeat after a lost answer would create twice.
func TestRetries(t *testing.T) {
	tests := []struct {
		name      string
		failures  int32
		status    int
		retries   int
		wantCalls int32
		wantErr   string
	}{
		{"5xx then success", 2, http.StatusServiceUnavailable, 3, 3, ""},
		{"5xx beyond retries", 5, http.StatusBadGateway, 2, 3, "502 TEMPORARILY_UNAVAILABLE"},
		{"4xx is not retried", 1, http.StatusBadRequest, 3, 1, "400"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var auth atomic.Value
			srv, calls := flaky(t, tc.failures, tc.status, &auth)
			err := client(srv.URL, tc.retries, "tok-abc", "", "").SetAlias(context.Background(), "m", "champion", "1")
			if calls.Load() != tc.wantCalls {
				t.Errorf("%d requests, want %d", calls.Load(), tc.wantCalls)
			}
			if (tc.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), "tok-abc") {
				t.Fatal("token in error")
			}
			if auth.Load() != "Bearer tok-abc" {
				t.Fatalf("Authorization = %v", auth.Load())
			}
		})
	}
}

func TestCreateIsNotRetried(t *testing.T) {
	var auth atomic.Value
	srv, calls := flaky(t, 2, http.StatusServiceUnavailable, &auth)
	err := client(srv.URL, 3, "", "", "").EnsureRegisteredModel(context.Background(), "m")
	if calls.Load() != 1 || err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("%d requests, err %v: want 1 request and the 503", calls.Load(), err)
	}
}

func TestConnectionErrorsAreRetried(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	uri := srv.URL
	srv.Close() // nothing listens there now
	start := time.Now()
	err := client(uri, 3, "", "u", "pw-secret").SetAlias(context.Background(), "m", "champion", "1")
	if err == nil || strings.Contains(err.Error(), "pw-secret") {
		t.Fatalf("err = %v", err)
	}
	// 1+2+4 ms of backoff at least: the three retries happened.
	if time.Since(start) < 7*time.Millisecond {
		t.Fatalf("gave up after %v: no backoff", time.Since(start))
	}
}

func TestBasicAuthFromEnv(t *testing.T) {
	t.Setenv("MLFLOW_TRACKING_USERNAME", "alice")
	t.Setenv("MLFLOW_TRACKING_PASSWORD", "pw")
	var auth atomic.Value
	srv, _ := flaky(t, 0, 0, &auth)
	if err := client(srv.URL, 0, "", "", "").EnsureRegisteredModel(context.Background(), "m"); err != nil {
		t.Fatal(err)
	}
	if auth.Load() != "Basic YWxpY2U6cHc=" {
		t.Fatalf("Authorization = %v", auth.Load())
	}
}
