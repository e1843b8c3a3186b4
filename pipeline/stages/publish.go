package stages

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/schedrl/schedrl/internal/atomicfile"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/pipeline"
)

// Registry is what the publish stage needs from the model registry; the command layer adapts
// package registry to it.
type Registry interface {
	// Store names the object store (for keys and records); it must not contain secrets.
	Store() string
	// Lookup returns the reference (MODEL@VERSION) that holds alias, "" when none does.
	Lookup(ctx context.Context, model, alias string) (string, error)
	// Publish stores the checkpoint in ckptDir with the eval report in reportDir as a new
	// version of model, or returns the existing version of the same checkpoint. note is the
	// gate's decision, kept with the version.
	Publish(ctx context.Context, model, ckptDir, reportDir, note string) (ref, uri string, err error)
	// Promote points alias at ref.
	Promote(ctx context.Context, ref, alias string) error
}

// publishStage publishes the fine-tuned checkpoint with its eval report and applies the
// champion gate.
type publishStage struct {
	reg  Registry
	gate config.GateConfig
	key  publishKey
	m    string
}

type publishKey struct {
	Model string            `json:"model"`
	Store string            `json:"store"`
	Gate  config.GateConfig `json:"gate"`
}

// Published is publish.json, the publish stage's output.
type Published struct {
	Model    string            `json:"model"`
	Ref      string            `json:"ref"`
	URI      string            `json:"uri"`
	Alias    string            `json:"alias"`
	Promoted bool              `json:"promoted"`
	Decision pipeline.Decision `json:"decision"`
}

func newPublish(cfg config.Config, reg Registry) (pipeline.Stage, error) {
	if err := checkGate(cfg); err != nil {
		return nil, err
	}
	if reg == nil {
		return unavailable("publish", "this build has no model registry"), nil
	}
	return &publishStage{reg: reg, gate: cfg.Pipeline.Gate, m: cfg.Pipeline.Model,
		key: publishKey{Model: cfg.Pipeline.Model, Store: reg.Store(), Gate: cfg.Pipeline.Gate}}, nil
}

// checkGate refuses, before any work, a gate that names workloads or baselines the eval stage
// does not produce.
func checkGate(cfg config.Config) error {
	g := cfg.Pipeline.Gate
	var traces []string
	for _, t := range cfg.Eval.Traces {
		traces = append(traces, traceName(cfg.Eval, t))
	}
	for i, w := range g.Workloads {
		if !slices.Contains(traces, w) {
			return fmt.Errorf("pipeline.gate.workloads[%d]: %q is not one of eval.traces %v", i, w, traces)
		}
	}
	for i, b := range g.Baselines {
		if !slices.ContainsFunc(cfg.Eval.Policies, func(p string) bool { return strings.EqualFold(p, b) }) {
			return fmt.Errorf("pipeline.gate.baselines[%d]: %q is not one of eval.policies %v", i, b, cfg.Eval.Policies)
		}
	}
	return nil
}

func (s *publishStage) Name() string     { return "publish" }
func (s *publishStage) Inputs() []string { return []string{"finetune", "eval"} }
func (s *publishStage) Config() any      { return s.key }

func (s *publishStage) Run(ctx context.Context, env pipeline.Env) (pipeline.Result, error) {
	evalDir := env.Inputs["eval"].Dir
	m, roles, err := readEvalOutput(evalDir)
	if err != nil {
		return pipeline.Result{}, err
	}
	scores, err := m.Score(s.gate.Metric)
	if err != nil {
		return pipeline.Result{}, fmt.Errorf("gate: %w", err)
	}
	gate := pipeline.Gate{Metric: s.gate.Metric, Margin: s.gate.Margin, Workloads: s.gate.Workloads, Baselines: s.gate.Baselines}
	d := gate.Decide(scores, roles.Candidate, roles.Champion)
	ref, uri, err := s.reg.Publish(ctx, s.m, env.Inputs["finetune"].Dir, evalDir, d.Reason)
	if err != nil {
		return pipeline.Result{}, err
	}
	out := Published{Model: s.m, Ref: ref, URI: uri, Alias: s.gate.Alias, Decision: d}
	switch {
	case ref == roles.Champion:
		// The same checkpoint was published before and already holds the alias.
		out.Promoted, out.Decision.Reason = true, "already "+s.gate.Alias
	case d.Promote:
		if err := s.reg.Promote(ctx, ref, s.gate.Alias); err != nil {
			return pipeline.Result{}, fmt.Errorf("promote %s to %s: %w", ref, s.gate.Alias, err)
		}
		out.Promoted = true
	}
	data, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return pipeline.Result{}, err
	}
	if err := atomicfile.WriteFile(filepath.Join(env.OutDir, "publish.json"), append(data, '\n'), 0o644); err != nil {
		return pipeline.Result{}, err
	}
	note := fmt.Sprintf("%s published without %s: %s", ref, s.gate.Alias, out.Decision.Reason)
	if out.Promoted {
		note = fmt.Sprintf("%s is %s: %s", ref, s.gate.Alias, out.Decision.Reason)
	}
	env.Log.Info("published", "ref", ref, "uri", uri, "promoted", out.Promoted, "reason", out.Decision.Reason)
	res := pipeline.Result{Note: note}
	if w := s.gate.Workloads[0]; scores[roles.Candidate] != nil {
		if v, ok := scores[roles.Candidate][w]; ok {
			res.Metric = &pipeline.Metric{Name: s.gate.Metric + "@" + w, Value: v}
		}
	}
	return res, nil
}
