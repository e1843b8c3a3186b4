package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"

	"github.com/schedrl/schedrl/kube/podlog"
	"github.com/schedrl/schedrl/sim"
)

// decisionLogFlags are the extender's decision log settings (--log-dir and its rotation).
type decisionLogFlags struct {
	LogDir      string
	LogMaxBytes int64
	LogMaxAge   time.Duration
}

func (d *decisionLogFlags) add(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&d.LogDir, "log-dir", "", "write the cluster's decisions as version-2 decision logs into this folder (docs/decision-log.md)")
	f.Int64Var(&d.LogMaxBytes, "log-max-bytes", 64<<20, "close a decision log file at this size and start the next")
	f.DurationVar(&d.LogMaxAge, "log-max-age", time.Hour, "close a decision log file at this age and start the next")
}

// start begins the decision log when --log-dir is set (nil otherwise); its metrics join reg.
// The caller closes it when it stops serving.
func (d decisionLogFlags) start(ctx context.Context, client kubernetes.Interface, model *sim.FragModel, seed uint64,
	sync time.Duration, meta map[string]string, reg *prometheus.Registry, log *slog.Logger) (*podlog.Live, error) {
	if d.LogDir == "" {
		return nil, nil
	}
	l, err := podlog.StartLive(ctx, podlog.LiveOptions{Client: client, Dir: d.LogDir, Model: model, TieSeed: seed,
		MaxBytes: d.LogMaxBytes, MaxAge: d.LogMaxAge, Meta: meta, SyncTimeout: sync, Log: log})
	if err != nil {
		return nil, err
	}
	reg.MustRegister(l.Collectors()...)
	return l, nil
}
