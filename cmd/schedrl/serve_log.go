package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"

	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/kube/podlog"
	"github.com/schedrl/schedrl/registry"
	"github.com/schedrl/schedrl/sim"
)

// decisionLogFlags are the extender's decision log settings (--log-dir and its rotation).
type decisionLogFlags struct {
	LogDir       string
	LogMaxBytes  int64
	LogMaxAge    time.Duration
	LogSpool     string
	LogUploadGap time.Duration
}

func (d *decisionLogFlags) add(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&d.LogDir, "log-dir", "", "write the cluster's decisions as version-2 decision logs into this folder, or a store prefix s3://BUCKET/PREFIX (docs/decision-log.md)")
	f.Int64Var(&d.LogMaxBytes, "log-max-bytes", 64<<20, "close a decision log file at this size and start the next")
	f.DurationVar(&d.LogMaxAge, "log-max-age", time.Hour, "close a decision log file at this age and start the next")
	f.StringVar(&d.LogSpool, "log-spool", "", "with --log-dir s3://...: the local folder files are written in before upload (default: schedrl-decision-log-spool in the temporary folder)")
	f.DurationVar(&d.LogUploadGap, "log-upload-interval", 30*time.Second, "with --log-dir s3://...: how often closed files are uploaded (and once more on exit)")
}

// start begins the decision log when --log-dir is set (nil without); its metrics join reg.
// The caller calls the returned stop when it stops serving: it closes the log and, with a store
// prefix, uploads what is left.
func (d decisionLogFlags) start(ctx context.Context, client kubernetes.Interface, model *sim.FragModel, seed uint64,
	sync time.Duration, meta map[string]string, reg *prometheus.Registry, s3 config.S3Config, log *slog.Logger) (live *podlog.Live, stop func(), err error) {
	if d.LogDir == "" {
		return nil, func() {}, nil
	}
	dir := d.LogDir
	var up *logUploader
	if strings.Contains(d.LogDir, "://") {
		if up, err = newLogUploader(ctx, d, s3, log); err != nil {
			return nil, nil, err
		}
		dir = up.spool
	}
	l, err := podlog.StartLive(ctx, podlog.LiveOptions{Client: client, Dir: dir, Model: model, TieSeed: seed,
		MaxBytes: d.LogMaxBytes, MaxAge: d.LogMaxAge, Meta: meta, SyncTimeout: sync, Log: log})
	if err != nil {
		return nil, nil, err
	}
	reg.MustRegister(l.Collectors()...)
	if up == nil {
		return l, func() { l.Close() }, nil
	}
	reg.MustRegister(up.uploaded)
	uctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); up.run(uctx, d.LogUploadGap) }()
	return l, func() {
		cancel()
		<-done
		if err := l.Close(); err != nil {
			log.Warn("decision log: close", "err", err)
		}
		fctx, fcancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer fcancel()
		if err := up.pass(fctx); err != nil {
			log.Error("decision log: final upload; the files stay in the spool folder and go up on the next start", "spool", up.spool, "store", d.LogDir, "err", err)
		}
	}, nil
}

// logUploader moves closed decision log files from a spool folder to a store prefix; a file
// leaves the spool only once the store has it. Closed files have their final names (the open
// one is hidden), so every name it sees is whole.
type logUploader struct {
	store    registry.Backend
	spool    string
	uri      string
	uploaded prometheus.Counter
	log      *slog.Logger
}

func newLogUploader(ctx context.Context, d decisionLogFlags, s3 config.S3Config, log *slog.Logger) (*logUploader, error) {
	if !strings.HasPrefix(d.LogDir, "s3://") {
		return nil, fmt.Errorf("--log-dir %s: want a folder or s3://BUCKET/PREFIX", d.LogDir)
	}
	store, err := registry.OpenBackend(config.RegistryConfig{Store: d.LogDir, S3: s3})
	if err != nil {
		return nil, fmt.Errorf("--log-dir: %w", err)
	}
	spool := d.LogSpool
	if spool == "" {
		spool = filepath.Join(os.TempDir(), "schedrl-decision-log-spool")
	}
	if err := os.MkdirAll(spool, 0o755); err != nil {
		return nil, fmt.Errorf("--log-spool: %w", err)
	}
	u := &logUploader{store: store, spool: spool, uri: d.LogDir, log: log,
		uploaded: prometheus.NewCounter(prometheus.CounterOpts{Name: "schedrl_decision_log_uploaded_total",
			Help: "Closed decision log files uploaded to the --log-dir store prefix."})}
	// Reach the store before serving (a wrong endpoint or key fails here, named), and send up
	// what a previous run left in the spool.
	lctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if _, err := store.List(lctx, ""); err != nil {
		return nil, fmt.Errorf("--log-dir %s: %w", d.LogDir, err)
	}
	if err := u.pass(lctx); err != nil {
		return nil, fmt.Errorf("--log-dir %s: upload of the spool's files: %w", d.LogDir, err)
	}
	return u, nil
}

// run uploads every interval until ctx ends.
func (u *logUploader) run(ctx context.Context, every time.Duration) {
	if every <= 0 {
		every = 30 * time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			pctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
			if err := u.pass(pctx); err != nil {
				u.log.Warn("decision log: upload (retried next interval)", "store", u.uri, "err", err)
			}
			cancel()
		}
	}
}

// pass uploads each closed file in the spool and removes it once stored.
func (u *logUploader) pass(ctx context.Context) error {
	entries, err := os.ReadDir(u.spool)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || !strings.HasPrefix(name, "decisions-") || !strings.HasSuffix(name, ".jsonl") {
			continue
		}
		if err := u.upload(ctx, name); err != nil {
			return err
		}
		u.uploaded.Inc()
	}
	return nil
}

func (u *logUploader) upload(ctx context.Context, name string) error {
	path := filepath.Join(u.spool, name)
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if err := u.store.Put(ctx, name, f, st.Size()); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return os.Remove(path)
}
