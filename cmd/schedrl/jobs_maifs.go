package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/eval"
	"github.com/schedrl/schedrl/fungible"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/nn"
	"github.com/schedrl/schedrl/registry"
)

// maifsDecodes are --maifs-decode's values: the coordinated decoder, and the ablation without
// the coordination graph.
var maifsDecodes = []string{"ordered", "graph-free"}

// isLearnedPolicy tells a checkpoint or registry reference (ckpt:DIR, MODEL@ALIAS) from a
// baseline's name.
func isLearnedPolicy(policy string) bool {
	return strings.HasPrefix(policy, "ckpt:") || strings.Contains(policy, "@")
}

// maifsPolicy loads the multi-agent checkpoint that ref names (pulling a registry reference
// into a temporary directory, which cleanup removes) and runs it as the fungible world's
// round policy, with the environment options it was trained with.
func maifsPolicy(cfg config.Config, ref string, c fungible.Cluster, m fungible.SpeedModel, decode string) (*env.MAIFSPolicy, func(), error) {
	cleanup := func() {}
	switch decode {
	case "", "ordered", "graph-free":
	default:
		return nil, cleanup, fmt.Errorf("jobs: --maifs-decode %q, want one of %s", decode, strings.Join(maifsDecodes, ", "))
	}
	r, err := eval.ParsePolicyRef(ref)
	if err != nil {
		return nil, cleanup, fmt.Errorf("jobs: --policy: %w", err)
	}
	dir := r.Dir
	if r.Kind == eval.Registry {
		tmp, err := os.MkdirTemp("", "schedrl-jobs-pull-")
		if err != nil {
			return nil, cleanup, err
		}
		cleanup = func() { os.RemoveAll(tmp) }
		dir = filepath.Join(tmp, r.Name+"@"+r.Tag)
		if err := pullVersion(cfg, r, dir, slog.Default()); err != nil {
			return nil, cleanup, err
		}
	}
	dev, err := nn.Device(cfg.Device)
	if err != nil {
		return nil, cleanup, fmt.Errorf("jobs: policy %q: %w", ref, err)
	}
	net, _, err := nn.LoadMAIFS(dir, dev)
	if err != nil {
		return nil, cleanup, fmt.Errorf("jobs: policy %q: %w", ref, err)
	}
	e, err := env.NewMAIFS(c, m, net.Arch.Options)
	if err != nil {
		return nil, cleanup, fmt.Errorf("jobs: policy %q: %w", ref, err)
	}
	return &env.MAIFSPolicy{Env: e, Scorer: nn.MAIFSScorer{Net: net, Dev: dev}, Uncoordinated: decode == "graph-free"}, cleanup, nil
}

// pullVersion pulls a registry reference's version into dest, within registry.deadline.
func pullVersion(cfg config.Config, ref eval.PolicyRef, dest string, log *slog.Logger) error {
	reg, err := registry.Open(cfg.Registry, log)
	if err != nil {
		return fmt.Errorf("policy %q: %w", ref.Raw, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Registry.Deadline)
	defer cancel()
	if _, err := reg.Pull(ctx, ref.Raw, dest, true); err != nil {
		return fmt.Errorf("policy %q: %w", ref.Raw, err)
	}
	return nil
}
