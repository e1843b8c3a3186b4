package stages

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/internal/testserver"
	"github.com/schedrl/schedrl/pipeline"
	"github.com/schedrl/schedrl/registry"
)

// TestStoreLogs: pipeline.logs.source s3://BUCKET/PREFIX, against a real MinIO, takes the
// decision logs directly under the prefix (a closed, content-addressed file as the extender
// uploads it and one named by hand; not a sub-folder's, a hidden temporary or another file),
// builds a dataset from them, is cached while the store holds the same logs and reruns when a
// log is added or a hand-named one rewritten; a content-addressed log whose bytes do not match
// its name is refused, named, and leaves no output; an empty prefix and a missing bucket are
// named errors.
func TestStoreLogs(t *testing.T) {
	minio, err := testserver.StartMinIO()
	if err != nil {
		t.Fatal(err)
	}
	defer minio.Close()
	if err := minio.MakeBucket("clusterlogs"); err != nil {
		t.Fatal(err)
	}
	s3 := config.Default().Registry.S3
	s3.Endpoint, s3.AccessKey, s3.SecretKey = minio.Endpoint, minio.AccessKey, minio.SecretKey
	ctx := context.Background()
	store, err := registry.OpenBackend(config.RegistryConfig{Store: "s3://clusterlogs/extender", S3: s3})
	if err != nil {
		t.Fatal(err)
	}
	put := func(name string, data []byte) {
		t.Helper()
		if err := store.Put(ctx, name, bytes.NewReader(data), int64(len(data))); err != nil {
			t.Fatal(err)
		}
	}

	// Real decision logs: the simulator's, from the logs stage of a first pipeline.
	sim := testConfig(t)
	sim.Pipeline.Stages, sim.Pipeline.LogSeeds = []string{"logs"}, "42-44"
	simLogs, _ := filepath.Glob(filepath.Join(run(t, sim).Stages[0].Output.Dir, "*.jsonl"))
	if len(simLogs) != 3 {
		t.Fatalf("simulated logs %v, want 3", simLogs)
	}
	var logs [][]byte
	for _, f := range simLogs {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		logs = append(logs, data)
	}
	closed := addressedName("20261206T030000.000000000Z", logs[0])
	put(closed, logs[0])
	put("imported.jsonl", logs[1])
	put("old/"+addressedName("20261205T030000.000000000Z", logs[2]), logs[2])
	put(".decisions-20261206T040000.000000000Z.jsonl.tmp-open", []byte("half"))
	put("notes.txt", []byte("not a log"))

	cfg := testConfig(t)
	cfg.Registry.S3 = s3
	cfg.Pipeline.Logs.Source = "s3://clusterlogs/extender"
	first := run(t, cfg)
	if got := statuses(first); got != "logs=done,datasets=done" {
		t.Fatalf("first run: %s", got)
	}
	out := first.Stages[0].Output.Dir
	entries, _ := os.ReadDir(out)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != closed+",imported.jsonl" {
		t.Errorf("logs stage output %v, want %s and imported.jsonl", names, closed)
	}
	if got, _ := os.ReadFile(filepath.Join(out, closed)); !bytes.Equal(got, logs[0]) {
		t.Errorf("%s: downloaded bytes differ from the store's", closed)
	}
	if m := first.Stages[1].Metric; m == nil || m.Name != "rows" || m.Value < 1 {
		t.Errorf("datasets metric %+v", m)
	}

	if got := statuses(run(t, cfg)); got != "logs=cached,datasets=cached" {
		t.Errorf("same store: %s, want logs=cached,datasets=cached", got)
	}
	put("imported.jsonl", logs[2])
	if got := statuses(run(t, cfg)); got != "logs=done,datasets=done" {
		t.Errorf("hand-named log rewritten: %s, want logs=done,datasets=done", got)
	}
	put(addressedName("20261206T031000.000000000Z", logs[1]), logs[1])
	if got := statuses(run(t, cfg)); got != "logs=done,datasets=done" {
		t.Errorf("log added: %s, want logs=done,datasets=done", got)
	}

	// A content-addressed name over other bytes: refused when downloaded, nothing kept.
	forged := addressedName("20261206T032000.000000000Z", logs[0])
	put(forged, logs[1])
	stage, err := newStoreLogs(cfg.Pipeline.Logs.Source, s3)
	if err != nil {
		t.Fatal(err)
	}
	_, err = stage.Run(ctx, pipeline.Env{OutDir: t.TempDir(), Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Progress: noProgress{}})
	if err == nil || !strings.Contains(err.Error(), forged) || !strings.Contains(err.Error(), "s3://clusterlogs/extender") {
		t.Errorf("forged content-addressed log: err = %v, want one naming %s and the source", err, forged)
	}
	p, err := Build(cfg, Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Run(ctx, pipeline.Options{Dir: cfg.Pipeline.Dir, CodeRevision: "test", Log: slog.New(slog.NewTextHandler(io.Discard, nil))}); err == nil || !strings.Contains(err.Error(), forged) {
		t.Errorf("pipeline with a forged log: err = %v, want one naming %s", err, forged)
	}

	for _, tc := range []struct{ src, want string }{
		{"s3://clusterlogs/empty", `"s3://clusterlogs/empty": holds no decision log`},
		{"s3://no-such-bucket/logs", `"s3://no-such-bucket/logs"`},
	} {
		if _, err := newStoreLogs(tc.src, s3); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("source %s: err = %v, want %q", tc.src, err, tc.want)
		}
	}
}

// addressedName is the name kube/podlog gives a closed log file opened at stamp.
func addressedName(stamp string, data []byte) string {
	sum := sha256.Sum256(data)
	return "decisions-" + stamp + "-" + hex.EncodeToString(sum[:])[:16] + ".jsonl"
}
