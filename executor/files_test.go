package executor

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedrl/schedrl/internal/checkpoint"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/registry"
)

// A checkpoint shipped to the store comes back file for file, each checked against its
// manifest; a blob changed in the store is refused and leaves no manifest behind.
func TestShipCheckpointThroughTheStore(t *testing.T) {
	ctx := context.Background()
	store := config.Default().Registry
	store.Store = "file://" + t.TempDir()
	src := t.TempDir()
	for name, data := range map[string]string{checkpoint.ModelFile: "weights", "report/curve.png": "png"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(src, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := checkpoint.Write(src, checkpoint.Manifest{Model: "entity-policy", Env: "placement", FeatureVersion: 1}); err != nil {
		t.Fatal(err)
	}
	key, blobs, err := PutCheckpoint(ctx, store, "inputs/test", src)
	if err != nil {
		t.Fatal(err)
	}
	if len(blobs) != 3 || blobs[2] != key || !strings.HasPrefix(key, "inputs/test/blobs/") {
		t.Fatalf("key %s, blobs %v", key, blobs)
	}
	// Shipping it again (a retried stage) stores nothing new and gives the same key.
	if again, _, err := PutCheckpoint(ctx, store, "inputs/test", src); err != nil || again != key {
		t.Fatalf("shipped again: %s (%v), want %s", again, err, key)
	}
	dst := filepath.Join(t.TempDir(), "ckpt")
	if err := FetchCheckpoint(ctx, store, key, dst); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{checkpoint.ModelFile, "report/curve.png", checkpoint.ManifestFile} {
		a, _ := os.ReadFile(filepath.Join(src, name))
		b, err := os.ReadFile(filepath.Join(dst, name))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("%s differs after the trip (%v)", name, err)
		}
	}
	if _, err := checkpoint.Read(dst); err != nil {
		t.Error(err)
	}

	b, err := registry.OpenBackend(store)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Put(ctx, blobs[0], strings.NewReader("other weights"), 13); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "ckpt")
	if err := FetchCheckpoint(ctx, store, key, bad); err == nil || !strings.Contains(err.Error(), "sha256") {
		t.Errorf("a changed blob: err %v, want a sha256 mismatch", err)
	}
	if _, err := os.Stat(filepath.Join(bad, checkpoint.ManifestFile)); err == nil {
		t.Error("a failed fetch left a manifest")
	}
	if err := DeleteBlobs(ctx, store, blobs); err != nil {
		t.Fatal(err)
	}
	if err := FetchCheckpoint(ctx, store, key, filepath.Join(t.TempDir(), "ckpt")); err == nil {
		t.Error("fetched a deleted checkpoint")
	}
}
