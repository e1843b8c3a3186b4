package stages

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/schedrl/schedrl/eval"
	"github.com/schedrl/schedrl/executor"
	"github.com/schedrl/schedrl/family"
	"github.com/schedrl/schedrl/internal/atomicfile"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/pipeline"
	"github.com/schedrl/schedrl/registry"
)

// evalStage evaluates the pretrained and fine-tuned checkpoints beside the eval section's
// heuristics (and the current champion, when there is one) on the held-out workloads: in the
// arrival protocol, or in the timed world eval.timed.kind names.
type evalStage struct {
	cfg      config.EvalConfig
	champion string // registry reference MODEL@VERSION of the current champion, or ""
	resolve  eval.Resolver
	learned  eval.Learned
	online   *config.DefragOnlineConfig // the defrag-online kind's timelines
	metric   string                     // the gate's (its first), reported as the stage's metric
	key      evalKey
	// full and evaluate are the config and its family's Evaluate, for a family whose world eval
	// does not run (nil: eval runs it).
	full     config.Config
	evaluate func(context.Context, config.Config, *slog.Logger) error
	// exec runs the arrival protocol's cells; with kubernetes, the checkpoints are shipped to
	// store first (no pod reads this machine's stage cache).
	exec  config.ExecutorConfig
	store config.RegistryConfig
}

type evalKey struct {
	Eval     config.EvalConfig `json:"eval"`
	Online   any               `json:"online,omitempty"` // the family's eval section, for a family's kind
	Champion string            `json:"champion"`
	Files    []logFile         `json:"files"`
}

// evalPolicies is written beside metrics.json: which policy in it is which pipeline role, so
// the publish stage's gate reads the right rows.
type evalPolicies struct {
	Candidate  string `json:"candidate"`  // the fine-tuned checkpoint
	Pretrained string `json:"pretrained"` // the behaviour-cloned checkpoint
	Champion   string `json:"champion,omitempty"`
}

const evalPoliciesFile = "pipeline-policies.json"

func newEval(cfg config.Config, d Deps) (pipeline.Stage, error) {
	if d.ResolvePolicy == nil {
		return nil, errors.New("stage eval: no policy resolver for checkpoints (Deps.ResolvePolicy)")
	}
	// Pods run the arrival protocol's shards; timed worlds and a family's own evaluation do
	// not shard in the pipeline yet.
	if f, ok := family.Get(cfg.Finetune.Env); (ok && f.Evaluate != nil) || cfg.Eval.Timed.Kind != "" {
		if err := localOnly(cfg, fmt.Sprintf("the eval stage of finetune.env %q, eval.timed.kind %q", cfg.Finetune.Env, cfg.Eval.Timed.Kind)); err != nil {
			return nil, err
		}
	}
	// The current champion runs on the same workloads as the candidate, so the gate compares
	// like with like; its version is in the key, so a new champion means a new evaluation.
	champion, err := lookupAlias(d.registry, cfg.Pipeline.Model, cfg.Pipeline.Gate.Alias)
	if err != nil {
		return nil, err
	}
	files, err := eval.InputFiles(cfg.Eval)
	if err != nil {
		return nil, fmt.Errorf("eval.traces: %w", err)
	}
	hashes, err := hashFiles("eval", files)
	if err != nil {
		return nil, err
	}
	s := &evalStage{cfg: cfg.Eval, champion: champion, resolve: d.ResolvePolicy, learned: d.Learned,
		online: &cfg.DefragOnline, metric: cfg.Pipeline.Gate.Names()[0]}
	s.key = evalKey{Eval: cfg.Eval, Champion: champion, Files: hashes}
	if f, ok := family.Get(cfg.Eval.Timed.Kind); ok && f.EvalSection != nil {
		if s.key.Online, err = f.EvalSection(cfg); err != nil {
			return nil, err
		}
	}
	if f, ok := family.Get(cfg.Finetune.Env); ok && f.Evaluate != nil {
		s.full, s.evaluate = cfg, f.Evaluate
	}
	s.exec, s.store = cfg.Pipeline.Executor, cfg.Registry
	// Locations and parallelism do not change the numbers.
	s.key.Eval.Out, s.key.Eval.Parallelism, s.key.Eval.TracesDir = "", 0, ""
	s.key.Eval.Nodes, s.key.Eval.Paper = "", ""
	return s, nil
}

func (s *evalStage) Name() string     { return "eval" }
func (s *evalStage) Inputs() []string { return []string{"pretrain", "finetune"} }
func (s *evalStage) Config() any      { return s.key }

func (s *evalStage) Run(ctx context.Context, env pipeline.Env) (pipeline.Result, error) {
	roles := evalPolicies{
		Candidate:  "ckpt:" + checkpointDir(env.Inputs["finetune"].Dir),
		Pretrained: "ckpt:" + checkpointDir(env.Inputs["pretrain"].Dir),
		Champion:   s.champion,
	}
	ec := s.cfg
	ec.Out = env.OutDir
	ec.Policies = append(append([]string{}, s.cfg.Policies...), roles.Pretrained, roles.Candidate)
	if roles.Champion != "" {
		ec.Policies = append(ec.Policies, roles.Champion)
	}
	opts := eval.Options{Resolve: s.resolve, Learned: s.learned, DefragOnline: s.online,
		Force: true, Log: env.Log, Progress: env.Terminal}
	if s.exec.Kind == "kubernetes" {
		cleanup, err := s.remote(ctx, env, ec, &opts, roles.Pretrained, roles.Candidate)
		defer cleanup()
		if err != nil {
			return pipeline.Result{}, err
		}
	}
	var err error
	if s.evaluate != nil {
		full := s.full
		full.Eval = ec
		err = s.evaluate(ctx, full, env.Log)
	} else if ec.Timed.Kind != "" {
		_, err = eval.RunTimed(ctx, ec, opts)
	} else {
		_, err = eval.Run(ctx, ec, opts)
	}
	if err != nil {
		return pipeline.Result{}, err
	}
	data, err := json.MarshalIndent(roles, "", "  ")
	if err != nil {
		return pipeline.Result{}, err
	}
	if err := atomicfile.WriteFile(filepath.Join(env.OutDir, evalPoliciesFile), append(data, '\n'), 0o644); err != nil {
		return pipeline.Result{}, err
	}
	m, _, err := readEvalOutput(env.OutDir)
	if err != nil {
		return pipeline.Result{}, err
	}
	names, err := eval.WorkloadNames(ec)
	if err != nil || len(names) == 0 {
		return pipeline.Result{}, err
	}
	scores, err := m.Score(s.metric)
	if err != nil {
		return pipeline.Result{}, err
	}
	return pipeline.Result{Metric: candidateMean(scores, s.metric, roles.Candidate, names[0])}, nil
}

// remote has opts run the cells as kubernetes executor pods: it ships the checkpoints of
// the ckpt: policies to the store by digest, so that each pod reads them from there
// (`schedrl eval --checkpoint-from-store DIR=KEY`). cleanup deletes what was shipped.
func (s *evalStage) remote(ctx context.Context, env pipeline.Env, ec config.EvalConfig, opts *eval.Options, checkpoints ...string) (func(), error) {
	x, err := executor.New(s.exec, s.store, env.Log)
	if err != nil {
		return func() {}, err
	}
	suffix := make([]byte, 4)
	rand.Read(suffix)
	prefix := "inputs/eval-" + hex.EncodeToString(suffix)
	var shipped []string
	cleanup := func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.store.Deadline)
		defer cancel()
		if err := executor.DeleteBlobs(ctx, s.store, shipped); err != nil {
			env.Log.Warn("shipped checkpoints not deleted", "err", err)
		}
	}
	args := eval.ShardArgs(ec)
	for _, p := range checkpoints {
		dir := strings.TrimPrefix(p, "ckpt:")
		key, blobs, err := executor.PutCheckpoint(ctx, s.store, prefix, dir)
		shipped = append(shipped, blobs...)
		if err != nil {
			return cleanup, fmt.Errorf("ship checkpoint %s: %w", dir, err)
		}
		env.Log.Info("checkpoint shipped", "dir", dir, "key", key)
		args = append(args, "--checkpoint-from-store="+dir+"="+key)
	}
	opts.Shards = s.exec.ShardCount(math.MaxInt32)
	opts.Remote = func(ctx context.Context, n int, local func(context.Context, int) ([]byte, error)) ([][]byte, error) {
		return x.Run(ctx, executor.Work{Name: "eval", Shards: n, Local: local, Args: args})
	}
	return cleanup, nil
}

// candidateMean is the candidate's mean score on workload, nil when it has none.
func candidateMean(scores map[string]map[string][]float64, metric, candidate, workload string) *pipeline.Metric {
	v, ok := scores[candidate][workload]
	if !ok {
		return nil
	}
	return &pipeline.Metric{Name: metric + "@" + workload, Value: eval.Summarize(v).Mean}
}

// readEvalOutput loads an eval stage output: its report (either layout) and the policies'
// roles.
func readEvalOutput(dir string) (eval.Report, evalPolicies, error) {
	var roles evalPolicies
	m, err := eval.ReadReport(filepath.Join(dir, "metrics.json"))
	if err != nil {
		return nil, roles, err
	}
	data, err := os.ReadFile(filepath.Join(dir, evalPoliciesFile))
	if err != nil {
		return nil, roles, err
	}
	if err := json.Unmarshal(data, &roles); err != nil {
		return nil, roles, fmt.Errorf("%s: %w", filepath.Join(dir, evalPoliciesFile), err)
	}
	return m, roles, nil
}

// lookupAlias returns the MODEL@N reference holding alias, "" when the model has no such
// alias (or no versions yet, or the store does not exist yet: the first publish creates it).
func lookupAlias(reg *registry.Registry, model, alias string) (string, error) {
	aliases, err := reg.Aliases(context.Background(), model)
	if errors.Is(err, registry.ErrNoStore) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("registry: aliases of %s: %w", model, err)
	}
	n, ok := aliases[alias]
	if !ok {
		return "", nil
	}
	return fmt.Sprintf("%s@%d", model, n), nil
}
