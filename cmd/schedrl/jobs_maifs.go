package main

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/eval"
	"github.com/schedrl/schedrl/fungible"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/nn"
)

// maifsDecodes are --maifs-decode's values: the coordinated decoder, and the ablation without
// the coordination graph.
var maifsDecodes = []string{"ordered", "graph-free"}

// isLearnedPolicy tells a checkpoint or registry reference (ckpt:DIR, MODEL@ALIAS) from a
// baseline's name.
func isLearnedPolicy(policy string) bool {
	return strings.HasPrefix(policy, "ckpt:") || strings.Contains(policy, "@")
}

// maifsRule is a multi-agent checkpoint's rule in a round log's header.
const maifsRule = env.MAIFSName

// maifsPolicy loads the multi-agent checkpoint that ref names (pulling a registry reference
// into a temporary directory, which cleanup removes) and runs it as the fungible world's
// round policy, with the environment options it was trained with.
func maifsPolicy(cfg config.Config, ref string, c fungible.Cluster, m fungible.SpeedModel, decode string) (*env.MAIFSPolicy, func(), error) {
	pull := &refPuller{cfg: cfg, log: slog.Default()}
	r, err := eval.ParsePolicyRef(ref)
	if err != nil {
		return nil, pull.cleanup, fmt.Errorf("jobs: --policy: %w", err)
	}
	dir, err := pull.dir(r)
	if err != nil {
		return nil, pull.cleanup, err
	}
	p, err := loadMAIFS(cfg, dir, c, m, decode)
	if err != nil {
		return nil, pull.cleanup, fmt.Errorf("jobs: policy %q: %w", ref, err)
	}
	return p, pull.cleanup, nil
}

// loadMAIFS is the checkpoint in dir as a round policy over c and m with the decoder decode.
func loadMAIFS(cfg config.Config, dir string, c fungible.Cluster, m fungible.SpeedModel, decode string) (*env.MAIFSPolicy, error) {
	if decode != "" && !slices.Contains(maifsDecodes, decode) {
		return nil, fmt.Errorf("decoder %q, want one of %s", decode, strings.Join(maifsDecodes, ", "))
	}
	dev, err := nn.Device(cfg.Device)
	if err != nil {
		return nil, err
	}
	net, _, err := nn.LoadMAIFS(dir, dev)
	if err != nil {
		return nil, err
	}
	opts := net.Arch.Options
	if o := cfg.MAIFS.WindowOrder; o != "" {
		opts.WindowOrder = o // which jobs are agents is no weight of the network
	}
	e, err := env.NewMAIFS(c, m, opts)
	if err != nil {
		return nil, err
	}
	return &env.MAIFSPolicy{Env: e, Scorer: nn.MAIFSScorer{Net: net, Dev: dev}, Uncoordinated: decode == "graph-free"}, nil
}

// The fungible eval kind's multi-agent networks load here.
func init() {
	registerLearned(eval.FungibleKind, func(cfg config.Config, log *slog.Logger) (any, func()) { return maifsResolver(cfg, log) })
}

// maifsResolver resolves the fungible eval's multi-agent checkpoints and registry references
// (pulled once into a temporary directory, which cleanup removes): each reference is loaded
// once before any run, so a bad one fails first, and again for every run, which keeps its own
// network and decision counts.
func maifsResolver(cfg config.Config, log *slog.Logger) (eval.FungibleResolver, func()) {
	// Eval already runs one simulation per core; libtorch threads on top would only contend.
	if cfg.Device.Threads == 0 && cfg.Eval.Parallelism != 1 {
		cfg.Device.Threads = 1
	}
	pull := &refPuller{cfg: cfg, log: log}
	return func(ref eval.PolicyRef, decode string, c fungible.Cluster, m fungible.SpeedModel) (eval.FungibleFactory, error) {
		dir, err := pull.dir(ref)
		if err != nil {
			return nil, err
		}
		if _, err := loadMAIFS(cfg, dir, c, m, decode); err != nil {
			return nil, fmt.Errorf("policy %q: %w", ref.Raw, err)
		}
		return func() (fungible.RoundPolicy, error) {
			p, err := loadMAIFS(cfg, dir, c, m, decode)
			if err != nil {
				return nil, fmt.Errorf("policy %q: %w", ref.Raw, err)
			}
			return p, nil
		}, nil
	}, pull.cleanup
}
