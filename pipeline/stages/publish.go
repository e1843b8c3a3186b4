package stages

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/schedrl/schedrl/eval"
	"github.com/schedrl/schedrl/internal/atomicfile"
	"github.com/schedrl/schedrl/internal/checkpoint"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/pipeline"
	"github.com/schedrl/schedrl/registry"
)

// publishStage publishes the fine-tuned checkpoint with its eval report as a registry version
// and applies the champion gate.
type publishStage struct {
	reg        *registry.Registry
	store      string // the registry's store, for messages
	model      string
	gate       config.GateConfig
	key        publishKey
	configHash string // the version's config_hash: configHash(cfg)
}

type publishKey struct {
	Model string            `json:"model"`
	Store string            `json:"store"`
	Gate  config.GateConfig `json:"gate"`
}

// Published is publish.json, the publish stage's output.
type Published struct {
	Ref      string            `json:"ref"` // MODEL@N
	URI      string            `json:"uri"`
	Digest   string            `json:"digest"`   // the version's manifest digest
	Existing bool              `json:"existing"` // the same checkpoint was already a version
	Alias    string            `json:"alias"`
	Promoted bool              `json:"promoted"` // the version holds Alias after this stage
	Decision pipeline.Decision `json:"decision"`
}

func newPublish(cfg config.Config, reg *registry.Registry) (pipeline.Stage, error) {
	if err := checkGate(cfg); err != nil {
		return nil, err
	}
	ch, err := configHash(cfg)
	if err != nil {
		return nil, err
	}
	return &publishStage{reg: reg, store: cfg.Registry.Store, model: cfg.Pipeline.Model, gate: cfg.Pipeline.Gate,
		key: publishKey{Model: cfg.Pipeline.Model, Store: cfg.Registry.Store, Gate: cfg.Pipeline.Gate}, configHash: ch}, nil
}

// configHash is the sha256 of the pipeline's config as JSON with the registry section and
// pipeline.executor left out: where a version is published, with which credentials, and
// where its stages ran do not make it.
func configHash(cfg config.Config) (string, error) {
	cfg.Registry, cfg.Pipeline.Executor = config.RegistryConfig{}, config.ExecutorConfig{}
	data, err := json.Marshal(cfg)
	if err != nil {
		return "", fmt.Errorf("publish: hash the config: %w", err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}

// lineage is what a published version records of how it was made, where the fine-tuned
// checkpoint does not say: the dataset behaviour cloning read (the pretrained checkpoint's
// dataset_hash, else the datasets stage's content hash), the pipeline's config hash, and the
// build's code revision.
func (s *publishStage) lineage(env pipeline.Env) (checkpoint.Manifest, error) {
	lin := checkpoint.Manifest{ConfigHash: s.configHash, CodeRevision: pipeline.BuildRevision()}
	if pre, ok := env.Upstream["pretrain"]; ok {
		m, err := checkpoint.Read(checkpointDir(pre.Dir))
		if err != nil {
			return lin, fmt.Errorf("lineage: %w", err)
		}
		lin.DatasetHash = m.DatasetHash
	}
	if ds, ok := env.Upstream["datasets"]; ok && lin.DatasetHash == "" {
		lin.DatasetHash = ds.Hash
	}
	return lin, nil
}

// checkGate refuses, before any work, a gate whose metrics the eval stage's report does not
// have or that names workloads or baselines the eval stage does not produce.
func checkGate(cfg config.Config) error {
	g := cfg.Pipeline.Gate
	key := "pipeline.gate.metric"
	if len(g.Metrics) > 0 {
		key = "pipeline.gate.metrics"
	}
	guards, _ := g.GuardrailsOf() // the gate's validation parsed them
	type checked struct{ key, name string }
	var measures []checked
	for _, name := range g.Names() {
		measures = append(measures, checked{key, name})
	}
	for i, gr := range guards {
		measures = append(measures, checked{fmt.Sprintf("pipeline.gate.guardrails[%d]", i), gr.Metric.Name})
	}
	for _, c := range measures {
		key, name := c.key, c.name
		metric, _ := config.GateMetricOf(name) // the gate's validation knows it
		switch timed := cfg.Eval.Timed.Kind != ""; {
		case metric.Timed && !timed:
			return fmt.Errorf("%s: %s is a timed evaluation's measure, and eval.timed.kind is not set", key, name)
		case !metric.Timed && timed:
			return fmt.Errorf("%s: %s is the arrival protocol's measure, and eval.timed.kind is %q", key, name, cfg.Eval.Timed.Kind)
		}
	}
	names, err := eval.WorkloadNames(cfg.Eval)
	if err != nil {
		return fmt.Errorf("eval.%w", err)
	}
	for i, w := range g.Workloads {
		if !slices.Contains(names, w) {
			return fmt.Errorf("pipeline.gate.workloads[%d]: %q is not one of eval.traces' workloads %v", i, w, names)
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
	gate := pipeline.Gate{Margin: s.gate.Margin, Paired: s.gate.Paired, Workloads: s.gate.Workloads, Baselines: s.gate.Baselines}
	scores := map[string]pipeline.Scores{}
	for _, name := range s.gate.Names() {
		if scores[name], err = m.Score(name); err != nil {
			return pipeline.Result{}, fmt.Errorf("gate: %w", err)
		}
		metric, _ := config.GateMetricOf(name)
		gate.Metrics = append(gate.Metrics, pipeline.Measure{Name: name, LowerIsBetter: metric.LowerIsBetter})
	}
	guards, err := s.gate.GuardrailsOf()
	if err != nil {
		return pipeline.Result{}, err
	}
	for _, gr := range guards {
		if scores[gr.Metric.Name] == nil {
			if scores[gr.Metric.Name], err = m.Score(gr.Metric.Name); err != nil {
				return pipeline.Result{}, fmt.Errorf("gate: %w", err)
			}
		}
		gate.Guardrails = append(gate.Guardrails, pipeline.Guardrail{
			Measure: pipeline.Measure{Name: gr.Metric.Name, LowerIsBetter: gr.Metric.LowerIsBetter}, Tolerance: gr.Tolerance})
	}
	d := gate.Decide(scores, roles.Candidate, roles.Champion)

	version, err := os.MkdirTemp("", "schedrl-publish-*")
	if err != nil {
		return pipeline.Result{}, err
	}
	defer os.RemoveAll(version)
	lin, err := s.lineage(env)
	if err != nil {
		return pipeline.Result{}, err
	}
	if err := assembleVersion(version, checkpointDir(env.Inputs["finetune"].Dir), evalDir, m, roles.Candidate, lin); err != nil {
		return pipeline.Result{}, err
	}
	v, err := s.reg.Publish(ctx, s.model, version)
	if err != nil {
		return pipeline.Result{}, err
	}
	out := Published{Ref: v.Ref(), URI: v.URI, Digest: v.Digest, Existing: v.Existing, Alias: s.gate.Alias, Decision: d}
	switch {
	case slices.Contains(v.Aliases, s.gate.Alias):
		out.Promoted, out.Decision.Reason = true, "already "+s.gate.Alias+" (the same checkpoint was published before)"
	case d.Promote:
		if _, err := s.reg.Promote(ctx, v.Ref(), s.gate.Alias); err != nil {
			return pipeline.Result{}, err
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
	note := fmt.Sprintf("%s published without %s: %s", out.Ref, s.gate.Alias, out.Decision.Reason)
	if out.Promoted {
		note = fmt.Sprintf("%s is %s: %s", out.Ref, s.gate.Alias, out.Decision.Reason)
	}
	env.Log.Info("published", "ref", out.Ref, "uri", out.URI, "promoted", out.Promoted, "reason", out.Decision.Reason)
	first := s.gate.Names()[0]
	return pipeline.Result{Note: note, Metric: candidateMean(scores[first], first, roles.Candidate, s.gate.Workloads[0])}, nil
}

// Missing reports a cached publish whose version is gone from the registry (deleted, or
// another store), or holds another checkpoint than the one published: the stage then
// publishes again.
func (s *publishStage) Missing(ctx context.Context, out pipeline.Output) (string, error) {
	path := filepath.Join(out.Dir, "publish.json")
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	var p Published
	if err := json.Unmarshal(data, &p); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	// A store that no longer exists holds no version either: publishing creates it again.
	versions, err := s.reg.Versions(ctx, s.model)
	if err != nil && !errors.Is(err, registry.ErrNotFound) && !errors.Is(err, registry.ErrNoStore) {
		return "", err
	}
	for _, v := range versions {
		if v.Ref() == p.Ref && v.Digest == p.Digest {
			return "", nil
		}
	}
	return fmt.Sprintf("version %s (digest %.12s) is not in the registry %s", p.Ref, p.Digest, s.store), nil
}

// assembleVersion lays out a registry version in dir: the checkpoint's files, the eval
// report under report/, and the checkpoint's manifest with the candidate's eval means added
// as eval_MEASURE_WORKLOAD and lin's lineage fields where the checkpoint has none (its creation
// time kept, so the same checkpoint and eval always give the same digest).
func assembleVersion(dir, ckptDir, evalDir string, m eval.Report, candidate string, lin checkpoint.Manifest) error {
	man, err := checkpoint.Read(ckptDir)
	if err != nil {
		return err
	}
	for _, f := range []struct {
		dst *string
		src string
	}{
		{&man.DatasetHash, lin.DatasetHash}, {&man.ConfigHash, lin.ConfigHash}, {&man.CodeRevision, lin.CodeRevision},
	} {
		if *f.dst == "" {
			*f.dst = f.src
		}
	}
	for _, f := range man.Files {
		dst := filepath.Join(dir, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if _, err := copyFile(filepath.Join(ckptDir, filepath.FromSlash(f.Path)), dst); err != nil {
			return err
		}
	}
	if err := copyTree(evalDir, filepath.Join(dir, "report")); err != nil {
		return err
	}
	if man.Metrics == nil {
		man.Metrics = map[string]float64{}
	}
	for k, v := range m.Means(candidate) {
		man.Metrics["eval_"+k] = v
	}
	_, err = checkpoint.Write(dir, man)
	return err
}

func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		_, err = copyFile(path, target)
		return err
	})
}
