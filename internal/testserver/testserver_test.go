package testserver

import (
	"context"
	"net/http"
	"testing"
	"time"
)

// TestServersStartStopRestart runs the real servers: MinIO keeps its buckets across a
// restart on the same port, and MLflow answers /health after one.
func TestServersStartStopRestart(t *testing.T) {
	m, err := StartMinIO()
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.MakeBucket("kept"); err != nil {
		t.Fatal(err)
	}
	f, err := StartMLflow(m, "artifacts")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	m.Stop()
	c, err := m.Client()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if _, err := c.BucketExists(ctx, "kept"); err == nil {
		t.Fatal("stopped MinIO still answers")
	}
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	if ok, err := c.BucketExists(context.Background(), "kept"); err != nil || !ok {
		t.Fatalf("bucket lost across restart: %v %v", ok, err)
	}

	f.Stop()
	if _, err := http.Get(f.URI + "/health"); err == nil {
		t.Fatal("stopped MLflow still answers")
	}
	if err := f.Start(); err != nil {
		t.Fatal(err)
	}
}
