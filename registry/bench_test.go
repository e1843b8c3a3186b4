package registry

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/schedrl/schedrl/internal/checkpoint"
)

// BenchmarkPublishPullS3 publishes and pulls a checkpoint with a 32 MiB model.ot through the
// test MinIO; MB/s is payload bytes per publish+pull.
func BenchmarkPublishPullS3(b *testing.B) {
	cfg := s3Config(b, false)
	r, err := Open(cfg, testLogger())
	if err != nil {
		b.Fatal(err)
	}
	const size = 32 << 20
	b.SetBytes(size)
	for i := 0; b.Loop(); i++ {
		b.StopTimer() // a fresh checkpoint each time: the same one would not be uploaded again
		dir := filepath.Join(b.TempDir(), "ckpt")
		os.MkdirAll(dir, 0o755)
		payload := make([]byte, size)
		rand.Read(payload)
		if err := os.WriteFile(filepath.Join(dir, checkpoint.ModelFile), payload, 0o644); err != nil {
			b.Fatal(err)
		}
		if _, err := checkpoint.Write(dir, checkpoint.Manifest{Model: "m", Env: "e"}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		v, err := r.Publish(context.Background(), "bench", dir)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := r.Pull(context.Background(), v.Ref(), filepath.Join(b.TempDir(), fmt.Sprint("p", i)), false); err != nil {
			b.Fatal(err)
		}
	}
}
