package reach

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestCheck(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNotFound) // any answer counts as reachable
	}))
	defer srv.Close()
	// A port that was just free: nothing listens there.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	dir := t.TempDir()

	tests := []struct {
		target string
		ok     bool
	}{
		{srv.URL, true},
		{srv.URL + "/api/2.0/mlflow/experiments/list", true},
		{"tcp://" + host, true},
		{"s3://" + host + "/bucket", true},
		{host, true},
		{dir, true},
		{"file://" + dir, true},
		{"http://" + closed, false},
		{"tcp://" + closed, false},
		{closed, false},
		{dir + "/missing", false},
		{"ftp://" + host, false},
		{"nonsense", false},
	}
	for _, tt := range tests {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := Check(ctx, tt.target)
		cancel()
		if (err == nil) != tt.ok {
			t.Errorf("Check(%q) = %v, want ok=%v", tt.target, err, tt.ok)
		}
	}
}
