package registry

import (
	"context"
	"errors"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// `registry serve` on a store that does not exist fails at start, naming it (issue 34 item 5).
func TestServeMissingStoreFailsAtStart(t *testing.T) {
	cfg := fileConfig(t)
	cfg.Store = "file://" + filepath.Join(t.TempDir(), "typo")
	r := open(t, cfg)
	err := bounded(t, time.Minute, func() error {
		return r.Serve(context.Background(), "127.0.0.1:0", func(net.Addr) { t.Error("the server started") })
	})
	if !errors.Is(err, ErrNoStore) || !strings.Contains(err.Error(), "typo") {
		t.Fatalf("serve on a missing store: %v, want %v naming it", err, ErrNoStore)
	}
}

// A client that stalls mid-request, or holds an idle connection, is cut off (issue 34 item 6).
func TestServeClosesStalledConnections(t *testing.T) {
	r := open(t, fileConfig(t))
	if _, err := r.Publish(context.Background(), "m", makeCheckpoint(t, 1)); err != nil {
		t.Fatal(err)
	}
	r.serveTimeouts = ServeTimeouts{ReadHeader: 200 * time.Millisecond, Read: 300 * time.Millisecond, Write: 5 * time.Second, Idle: 200 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	addrc := make(chan net.Addr, 1)
	go r.Serve(ctx, "127.0.0.1:0", func(a net.Addr) { addrc <- a })
	addr := (<-addrc).String()
	for name, send := range map[string]string{
		"half a request": "GET / HTTP/1.1\r\nHost: x\r\n",
		"idle after one": "GET / HTTP/1.1\r\nHost: x\r\n\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := io.WriteString(c, send); err != nil {
				t.Fatal(err)
			}
			// The server closes the connection: the read ends (EOF or reset), well before
			// this test's own bound.
			c.SetReadDeadline(time.Now().Add(time.Minute))
			_, err = io.Copy(io.Discard, c)
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatal("the server kept the stalled connection open for a minute")
			}
		})
	}
}
