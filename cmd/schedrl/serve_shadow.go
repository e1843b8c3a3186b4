package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/kube/extender"
	"github.com/schedrl/schedrl/kube/shadowlog"
	"github.com/schedrl/schedrl/nn"
	"github.com/schedrl/schedrl/registry"
	"github.com/schedrl/schedrl/sim"
)

// shadowFlags are the extender's shadow run and model-switch settings.
type shadowFlags struct {
	Shadow         string // registry reference of the candidate
	ShadowQueue    int
	ShadowLog      string
	ShadowLogBytes int64
	ModelPoll      time.Duration
}

func (s *shadowFlags) add(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&s.Shadow, "shadow", "", "registry reference of a candidate placement checkpoint (e.g. placement@candidate) asked every question the serving model answers, off the request's path; see docs/deploy.md")
	f.IntVar(&s.ShadowQueue, "shadow-queue", 256, "questions waiting for the shadow at most; more are dropped and counted (schedrl_shadow_decisions_total{result=\"dropped\"})")
	f.StringVar(&s.ShadowLog, "shadow-log", "", "write each shadowed decision as a JSON line into this folder (files closed atomically as shadow-*.jsonl; read by schedrl eval --shadow)")
	f.Int64Var(&s.ShadowLogBytes, "shadow-log-max-bytes", 64<<20, "close a shadow log file at this size and start the next")
	f.DurationVar(&s.ModelPoll, "model-poll", 30*time.Second, "how often to resolve --model in the registry and switch to a new version it names (0: never)")
}

// validate checks the combination; errors name the flags.
func (s shadowFlags) validate() error {
	if s.ShadowLog != "" && s.Shadow == "" {
		return fmt.Errorf("--shadow-log %s needs --shadow", s.ShadowLog)
	}
	if s.Shadow != "" && s.ShadowQueue <= 0 {
		return fmt.Errorf("--shadow-queue %d: must be positive", s.ShadowQueue)
	}
	if s.ModelPoll < 0 {
		return fmt.Errorf("--model-poll %s: must not be negative", s.ModelPoll)
	}
	return nil
}

// options loads the candidate into a shadow configuration (nil without --shadow).
func (s shadowFlags) options(ctx context.Context, cfg config.Config, seed uint64, log *slog.Logger) (*extender.ShadowOptions, func(), error) {
	if s.Shadow == "" {
		return nil, func() {}, nil
	}
	p, v, cleanup, err := loadModelPlacer(ctx, cfg, s.Shadow, log)
	if err != nil {
		return nil, func() {}, fmt.Errorf("--shadow: %w", err)
	}
	o := &extender.ShadowOptions{Placer: p, Model: modelLabel(v), Queue: s.ShadowQueue, Seed: seed, Logger: log}
	if s.ShadowLog != "" {
		if o.Log, err = shadowlog.NewWriter(s.ShadowLog, s.ShadowLogBytes); err != nil {
			cleanup()
			return nil, func() {}, err
		}
	}
	return o, cleanup, nil
}

// modelLabel names a version in metrics and logs: MODEL@N and the digest's start.
func modelLabel(v registry.Version) string { return v.Ref() + " " + short(v.Digest) }

// loadModelPlacer pulls a registry version (every file's sha256 verified) into a temporary
// folder and loads it as a placer; cleanup removes the folder.
func loadModelPlacer(ctx context.Context, cfg config.Config, ref string, log *slog.Logger) (sim.Placer, registry.Version, func(), error) {
	dir, v, err := pullModel(ctx, cfg.Registry, ref, log)
	if err != nil {
		return nil, registry.Version{}, func() {}, err
	}
	cleanup := func() { os.RemoveAll(filepath.Dir(dir)) }
	dev, err := nn.Device(cfg.Device)
	if err == nil {
		var pol *nn.Policy
		if pol, err = nn.LoadPolicy(dir, dev); err == nil {
			return pol.NewPlacer(), v, cleanup, nil
		}
	}
	cleanup()
	return nil, registry.Version{}, func() {}, fmt.Errorf("model %s (%s): %w", ref, v.Ref(), err)
}

// modelSwitcher polls the registry for the version --model names and makes the extender serve
// a new one: pulled, verified and loaded before the switch, so a bad checkpoint is refused
// (logged, counted) and the running model kept.
type modelSwitcher struct {
	cfg      config.Config
	ref      string
	srv      *extender.Server
	digest   string // serving
	refused  string // the last digest refused, not retried until the alias moves again
	cleanup  func()
	switches *prometheus.CounterVec
	onSwitch func(label string) // if set, told the new model's label after each switch
	log      *slog.Logger
}

func newModelSwitcher(cfg config.Config, ref string, v registry.Version, srv *extender.Server, cleanup func(), log *slog.Logger) *modelSwitcher {
	m := &modelSwitcher{cfg: cfg, ref: ref, srv: srv, digest: v.Digest, cleanup: cleanup, log: log,
		switches: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "schedrl_extender_model_switches_total",
			Help: "Changes of the version --model names, by result: switched, refused (bad checkpoint, old model kept)."}, []string{"result"})}
	srv.Metrics().MustRegister(m.switches)
	return m
}

// run polls every interval until ctx ends, then removes the serving model's folder.
func (m *modelSwitcher) run(ctx context.Context, every time.Duration) {
	defer func() { m.cleanup() }()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			m.poll(ctx)
		}
	}
}

// poll checks the reference once and switches if it names a new, loadable version.
func (m *modelSwitcher) poll(ctx context.Context) {
	reg, err := registry.Open(m.cfg.Registry, m.log)
	if err != nil {
		m.log.Warn("extender: model poll", "model", m.ref, "err", err)
		return
	}
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	v, err := reg.Resolve(rctx, m.ref)
	cancel()
	if err != nil {
		m.log.Warn("extender: model poll", "model", m.ref, "err", err)
		return
	}
	if v.Digest == m.digest || v.Digest == m.refused {
		return
	}
	p, nv, cleanup, err := loadModelPlacer(ctx, m.cfg, v.Ref(), m.log)
	if err != nil {
		m.refused = v.Digest
		m.switches.WithLabelValues("refused").Inc()
		m.log.Error("extender: new model refused, keeping the serving one", "model", m.ref, "version", v.Ref(),
			"serving", m.srv.Model(), "err", err)
		return
	}
	old := m.srv.Model()
	m.srv.SetPlacer(p, modelLabel(nv))
	m.cleanup()
	m.cleanup, m.digest, m.refused = cleanup, nv.Digest, ""
	m.switches.WithLabelValues("switched").Inc()
	m.log.Info("extender: switched model", "model", m.ref, "from", old, "to", modelLabel(nv))
	if m.onSwitch != nil {
		m.onSwitch(modelLabel(nv))
	}
}
