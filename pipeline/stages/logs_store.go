package stages

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/schedrl/schedrl/internal/atomicfile"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/pipeline"
	"github.com/schedrl/schedrl/registry"
)

// storeLogs is the logs stage of pipeline.logs.source s3://BUCKET/PREFIX: every decision log
// (*.jsonl) directly under the prefix, where `serve extender --log-dir s3://...` uploads its
// closed files, downloaded into the stage output. The store is reached with the registry's S3
// settings (registry.s3: endpoint, keys, stall deadline, retries).
type storeLogs struct {
	uri   string
	store registry.Backend
	key   []logFile
}

// closedLog matches the name kube/podlog gives a closed log file,
// decisions-<opened>-<first 16 hex digits of its sha256>.jsonl: the name is its digest, so the
// key needs no download, and Run checks the bytes against it.
var closedLog = regexp.MustCompile(`^decisions-\d{8}T\d{6}\.\d{9}Z-([0-9a-f]{16})\.jsonl$`)

// storeListTime bounds the listing (and the hashing of logs whose name is not a digest) done
// when the stage is made; each request also has the store's stall deadline.
const storeListTime = 5 * time.Minute

func newStoreLogs(src string, s3 config.S3Config) (*storeLogs, error) {
	store, err := registry.OpenBackend(config.RegistryConfig{Store: src, S3: s3})
	if err != nil {
		return nil, fmt.Errorf("pipeline.logs.source %q: %w", src, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeListTime)
	defer cancel()
	names, err := store.List(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("pipeline.logs.source %q: %w", src, err)
	}
	s := &storeLogs{uri: src, store: store}
	for _, name := range names {
		if strings.Contains(name, "/") || !strings.HasSuffix(name, ".jsonl") || atomicfile.IsTemp(name) || strings.HasPrefix(name, ".") {
			continue
		}
		sum := ""
		if m := closedLog.FindStringSubmatch(name); m != nil {
			sum = m[1]
		} else {
			// Not content-addressed (copied there by hand): its digest is read now, so the
			// key says what the stage will train on.
			data, err := s.get(ctx, name)
			if err != nil {
				return nil, err
			}
			sum = sha256Hex(data)
		}
		s.key = append(s.key, logFile{name, sum})
	}
	if len(s.key) == 0 {
		return nil, fmt.Errorf("pipeline.logs.source %q: holds no decision log (*.jsonl)", src)
	}
	return s, nil
}

func (s *storeLogs) get(ctx context.Context, name string) ([]byte, error) {
	r, err := s.store.Get(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("pipeline.logs.source %q: %w", s.uri, err)
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("pipeline.logs.source %q: %s: %w", s.uri, name, err)
	}
	return data, nil
}

func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

func (s *storeLogs) Name() string     { return "logs" }
func (s *storeLogs) Inputs() []string { return nil }

// Config is the same as a folder's holding the same files would be, less the digests'
// length: the key is what was read, not where from.
func (s *storeLogs) Config() any { return map[string]any{"given": s.key} }

// Run downloads each log and refuses one whose bytes no longer match the digest in the key
// (replaced in the store after the stage was made), so the output is what the key says.
func (s *storeLogs) Run(ctx context.Context, env pipeline.Env) (pipeline.Result, error) {
	env.Progress.Start(int64(len(s.key)), "logs")
	var n int64
	for _, f := range s.key {
		data, err := s.get(ctx, f.Name)
		if err != nil {
			return pipeline.Result{}, err
		}
		if got := sha256Hex(data); !strings.HasPrefix(got, f.SHA256) {
			return pipeline.Result{}, fmt.Errorf("pipeline.logs.source %q: %s has sha256 %s, want %s (changed in the store while the pipeline ran?)",
				s.uri, f.Name, got, f.SHA256)
		}
		if _, err := copyReader(bytes.NewReader(data), filepath.Join(env.OutDir, f.Name)); err != nil {
			return pipeline.Result{}, err
		}
		n += int64(len(data))
		env.Progress.Add(1)
	}
	env.Log.Info("downloaded decision logs", "store", s.uri, "files", len(s.key), "bytes", n)
	return pipeline.Result{Metric: &pipeline.Metric{Name: "logs", Value: float64(len(s.key))}}, nil
}
