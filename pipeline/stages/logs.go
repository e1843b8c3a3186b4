package stages

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/schedrl/schedrl/family"
	"github.com/schedrl/schedrl/internal/atomicfile"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/pipeline"
)

// givenLogs is the logs stage when datasets.logs names existing decision logs (from a real
// cluster, or an earlier `schedrl sim` batch): it copies them into the stage output, so the
// cache holds exactly what the dataset was built from.
type givenLogs struct {
	files []string
	key   []logFile // enters the key: a log edited in place changes it
}

type logFile struct {
	Name   string `json:"name"`
	SHA256 string `json:"sha256"`
}

// localOnly refuses the kubernetes executor for heavy work that does not shard yet: it would
// silently stay on this machine otherwise (docs/distributed.md says what runs where).
func localOnly(cfg config.Config, what string) error {
	if k := cfg.Pipeline.Executor.Kind; k != "local" {
		return fmt.Errorf("pipeline.executor.kind: %q: %s runs on the local executor only (docs/distributed.md says what runs where)", k, what)
	}
	return nil
}

func newLogs(cfg config.Config) (pipeline.Stage, error) {
	if src := cfg.Pipeline.Logs.Source; src != "" {
		if strings.HasPrefix(src, "s3://") && cfg.Datasets.Logs == "" {
			return newStoreLogs(src, cfg.Registry.S3)
		}
		return newSourceLogs(src, cfg.Datasets.Logs)
	}
	if cfg.Datasets.Logs != "" {
		return newGivenLogs(cfg.Datasets.Logs)
	}
	// Expert logs for the family the pipeline trains (finetune.env): the stage's heavy case.
	f, ok := family.Get(cfg.Finetune.Env)
	if !ok || f.ExpertLogs == nil {
		return nil, fmt.Errorf("finetune.env: %q: the logs stage makes expert logs for %v only; set datasets.logs to existing decision logs",
			cfg.Finetune.Env, family.Names(func(f family.Family) bool { return f.ExpertLogs != nil }))
	}
	return f.ExpertLogs(cfg)
}

// newSourceLogs is the logs stage of pipeline.logs.source: every decision log (*.jsonl) of a
// folder, such as the extender's --log-dir or the output of `schedrl logs import` (a store
// prefix is newStoreLogs).
func newSourceLogs(src, datasetsLogs string) (*givenLogs, error) {
	switch {
	case datasetsLogs != "":
		return nil, fmt.Errorf("pipeline.logs.source %q and datasets.logs %q: set one of them", src, datasetsLogs)
	case strings.Contains(src, "://"):
		return nil, fmt.Errorf("pipeline.logs.source %q: want a folder or s3://BUCKET/PREFIX", src)
	}
	if st, err := os.Stat(src); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("pipeline.logs.source %q: not a folder", src)
	}
	s, err := newGivenLogs(filepath.Join(src, "*.jsonl"))
	if err != nil {
		return nil, fmt.Errorf("pipeline.logs.source %q: %w", src, err)
	}
	return s, nil
}

func newGivenLogs(glob string) (*givenLogs, error) {
	files, err := atomicfile.Glob(glob)
	if err != nil {
		return nil, fmt.Errorf("datasets.logs: %q: %w", glob, err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("datasets.logs: %q matches no file", glob)
	}
	sort.Strings(files)
	s := &givenLogs{files: files}
	seen := map[string]string{}
	for _, f := range files {
		base := filepath.Base(f)
		if prev, dup := seen[base]; dup {
			return nil, fmt.Errorf("datasets.logs: %s and %s have the same file name", prev, f)
		}
		seen[base] = f
		sum, err := pipeline.HashFile(f)
		if err != nil {
			return nil, fmt.Errorf("datasets.logs: %w", err)
		}
		s.key = append(s.key, logFile{base, sum})
	}
	return s, nil
}

func (s *givenLogs) Name() string     { return "logs" }
func (s *givenLogs) Inputs() []string { return nil }
func (s *givenLogs) Config() any      { return map[string]any{"given": s.key} }

func (s *givenLogs) Run(ctx context.Context, env pipeline.Env) (pipeline.Result, error) {
	env.Progress.Start(int64(len(s.files)), "logs")
	var bytes int64
	for _, f := range s.files {
		if err := ctx.Err(); err != nil {
			return pipeline.Result{}, err
		}
		n, err := copyFile(f, filepath.Join(env.OutDir, filepath.Base(f)))
		if err != nil {
			return pipeline.Result{}, err
		}
		bytes += n
		env.Progress.Add(1)
	}
	env.Log.Info("copied decision logs", "files", len(s.files), "bytes", bytes)
	return pipeline.Result{Metric: &pipeline.Metric{Name: "logs", Value: float64(len(s.files))}}, nil
}

func copyFile(src, dst string) (int64, error) {
	in, err := os.Open(src)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	n, err := copyReader(in, dst)
	if err != nil {
		return n, fmt.Errorf("copy %s: %w", src, err)
	}
	return n, nil
}

// copyReader writes r to dst (in the stage's output folder, which the pipeline publishes whole
// only when the stage succeeds).
func copyReader(r io.Reader, dst string) (int64, error) {
	out, err := os.Create(dst)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(out, r)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return n, err
}
