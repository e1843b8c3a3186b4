package main

import (
	"fmt"
	"log/slog"

	"github.com/schedrl/schedrl/defrag"
	"github.com/schedrl/schedrl/defrag/online"
	"github.com/schedrl/schedrl/eval"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/nn"
)

// modelPlanner loads a defrag checkpoint as a planner on the configured device. It lives in
// cmd because the defrag package stays free of libtorch.
func modelPlanner(cfg config.Config, dir string) (defrag.Planner, error) {
	dev, err := nn.Device(cfg.Device)
	if err != nil {
		return nil, err
	}
	return nn.LoadDefragPolicy(dir, dev)
}

// The defrag-online eval kind's networks load here.
func init() {
	registerLearned(online.EnvName, func(cfg config.Config, log *slog.Logger) (any, func()) { return defragResolver(cfg, log) })
}

// defragResolver resolves the defrag-online eval's checkpoint and registry references (pulled
// as policyResolver pulls them) into online planners, the network loaded once per run.
func defragResolver(cfg config.Config, log *slog.Logger) (eval.DefragResolver, func()) {
	pull := &refPuller{cfg: cfg, log: log}
	opts := defragOptions(cfg)
	return func(ref eval.PolicyRef) (eval.DefragFactory, error) {
		dir, err := pull.dir(ref)
		if err != nil {
			return nil, err
		}
		if _, err := modelPlanner(cfg, dir); err != nil { // refused before any run
			return nil, fmt.Errorf("policy %q: %w", ref.Raw, err)
		}
		return func() (online.Planner, error) {
			p, err := modelPlanner(cfg, dir)
			if err != nil {
				return nil, fmt.Errorf("policy %q: %w", ref.Raw, err)
			}
			return online.FromDefrag(p, opts), nil
		}, nil
	}, pull.cleanup
}
