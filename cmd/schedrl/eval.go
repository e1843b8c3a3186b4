package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/schedrl/schedrl/eval"
	"github.com/schedrl/schedrl/executor"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/internal/manifestkind"
	"github.com/schedrl/schedrl/nn"
	"github.com/schedrl/schedrl/sim"
)

type evalOptions struct {
	Out    io.Writer
	Config config.Config // eval section with the flags applied
	Force  bool
	// Shadow, a glob of the extender's shadow logs, summarises a shadow period instead.
	Shadow, ShadowJSON string
	// Shard (I/N) runs one shard's cells and writes its part under the store key Part: what
	// the kubernetes executor's pods do (docs/distributed.md).
	Shard, Part string
	// Args are the eval keys that differ from the defaults, as flags: a shard's pod command.
	Args []string
	// Shipped maps a ckpt:DIR policy's DIR to the store key of the checkpoint the driver
	// shipped for it (executor.PutCheckpoint): a pod reads it from there.
	Shipped map[string]string
}

func newEvalCmd(runF func(context.Context, *evalOptions) error) *cobra.Command {
	if runF == nil {
		runF = runEval
	}
	opts := &evalOptions{}
	fl := &evalFlags{}
	var executorKind string
	var shipped []string
	cmd := &cobra.Command{
		Use:   "eval",
		Short: "Compare policies on held-out workloads: metrics.json, curves.csv, plots and a report",
		Long: "Runs every policy on every trace x seed in the ATC'23 arrival protocol, in parallel,\n" +
			"and writes metrics.json, curves.csv, PNG figures, report.md and report.html to --out.\n" +
			"Policies: heuristic names (random, dotprod, clustering, packing, bestfit, fgd), ckpt:DIR,\n" +
			"or registry references MODEL@VERSION|ALIAS. Traces: openb short names (default,\n" +
			"gpushare40, ...) or CSV paths. Flags override the config's eval section.\n" +
			"--timed jobs|fungible|tasks|defrag-online evaluates on timed workloads instead (docs/eval.md, \"Timed workloads\"):\n" +
			"policies are then what `schedrl jobs gavel|fungible --policy` takes (fungible: RULE/ORDER, queue policies, Gavel's LPs and\n" +
			"multi-agent checkpoints ckpt:DIR or MODEL@ALIAS, #graph-free for their decoder without the coordination graph;\n" +
			"tasks: placers; defrag-online: none, online\n" +
			"defrag methods or defrag checkpoints on the defrag_online section's timelines), traces Gavel trace files\n" +
			"(tasks, defrag-online: openb pod lists) and --generate jobs=N,lam=S[,multigpu]; JCT CDFs, allocation and queue length over time.",
		Example: "  schedrl eval --policies fgd,bestfit,ckpt:runs/pretrain --traces default,gpushare40 --seeds 49-51 --out runs/eval\n" +
			"  schedrl eval --timed jobs --policies fifo,srtf,max_min_fairness_perf --generate jobs=300,lam=900,multigpu --cluster 8:8:8 --seeds 0-2 --out runs/eval-jobs\n" +
			"  schedrl eval --timed fungible --servers-gpus 8 --policies synergy-tune/srtf,srtf,ckpt:runs/maifs/bc --baseline synergy-tune/srtf --generate jobs=300,lam=1200,multigpu --seeds 49-58 --out runs/eval-maifs\n" +
			"  schedrl eval --shadow 'shadow/shadow-*.jsonl' --shadow-json shadow-summary.json",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			fl.apply(cmd.Flags(), &cfg.Eval)
			if cmd.Flags().Changed("executor") {
				cfg.Pipeline.Executor.Kind = executorKind
				if err := cfg.Pipeline.Executor.Validate(); err != nil {
					return fmt.Errorf("--executor: pipeline.%w", err)
				}
			}
			if (opts.Shard == "") != (opts.Part == "") {
				return fmt.Errorf("--shard and --part go together")
			}
			if opts.Shipped, err = parseShipped(shipped); err != nil {
				return err
			}
			opts.Out, opts.Config, opts.Args = cmd.OutOrStdout(), cfg, eval.ShardArgs(cfg.Eval)
			if opts.Shadow != "" {
				return runEvalShadow(opts)
			}
			if opts.ShadowJSON != "" {
				return fmt.Errorf("--shadow-json %s needs --shadow", opts.ShadowJSON)
			}
			return runF(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	config.AddFlags(f, "")
	fl.add(f)
	f.BoolVar(&opts.Force, "force", false, "replace an existing report directory")
	f.StringVar(&opts.Shadow, "shadow", "", "summarise a shadow period instead: a glob of the extender's --shadow-log files (quote it), e.g. 'shadow/shadow-*.jsonl'")
	f.StringVar(&opts.ShadowJSON, "shadow-json", "", "with --shadow: also write the summary as JSON to this file")
	f.StringVar(&executorKind, "executor", "", "where the runs go: local, or kubernetes (an Indexed Job; pipeline.executor configures it, docs/distributed.md)")
	f.StringVar(&opts.Shard, "shard", "", "run only shard I/N of the cells and write its part to the registry store under --part (what an executor's pod runs)")
	f.StringVar(&opts.Part, "part", "", "with --shard: the store key prefix of the part")
	f.StringArrayVar(&shipped, "checkpoint-from-store", nil, "DIR=KEY: read policy ckpt:DIR from the checkpoint stored at KEY in the registry store (what the pipeline's eval stage gives its pods; repeatable)")
	return cmd
}

// parseShipped reads --checkpoint-from-store DIR=KEY flags (a key holds no "=").
func parseShipped(flags []string) (map[string]string, error) {
	m := map[string]string{}
	for _, f := range flags {
		i := strings.LastIndex(f, "=")
		if i <= 0 || i == len(f)-1 {
			return nil, fmt.Errorf("--checkpoint-from-store %q: want DIR=KEY", f)
		}
		m[f[:i]] = f[i+1:]
	}
	return m, nil
}

// runEvalShadow prints (and with --shadow-json writes) the summary of a shadow period.
func runEvalShadow(opts *evalOptions) error {
	s, files, err := eval.ShadowSummary(opts.Shadow)
	if err != nil {
		return err
	}
	eval.WriteShadowText(opts.Out, s, len(files))
	if opts.ShadowJSON != "" {
		return eval.WriteShadowJSON(opts.ShadowJSON, s)
	}
	return nil
}

// evalFlags holds the flags that override the config's eval section.
type evalFlags struct {
	policies, traces        []string
	seeds, out, nodes, tdir string
	baseline                string
	tune                    float64
	parallelism             int
	noPaper                 bool
	timed                   config.TimedEvalConfig
	generate                []string
}

func (fl *evalFlags) add(f *pflag.FlagSet) {
	f.StringSliceVar(&fl.policies, "policies", nil, "policies to compare (comma-separated)")
	f.StringSliceVar(&fl.traces, "traces", nil, "traces: openb short names or CSV paths (comma-separated)")
	f.StringVar(&fl.seeds, "seeds", "", "held-out workload seeds, e.g. 49-53 or 49,50,51")
	f.Float64Var(&fl.tune, "tune", 0, "workload tuning ratio (default 1.3)")
	f.StringVar(&fl.out, "out", "", "report directory")
	f.StringVar(&fl.baseline, "baseline", "", "policy the others are compared with seed by seed (default: the first)")
	f.StringVar(&fl.nodes, "nodes", "", "node list CSV")
	f.StringVar(&fl.tdir, "traces-dir", "", "directory of openb_pod_list_NAME.csv for short trace names")
	intFlag(f, &fl.parallelism, "parallelism", 0, 0, "concurrent runs (default: all CPUs)")
	markOutput(f, "out", string(manifestkind.EvalReport))
	f.BoolVar(&fl.noPaper, "no-paper", false, "do not overlay the paper's published curves")
	t := &fl.timed
	f.StringVar(&t.Kind, "timed", "", "evaluate on timed workloads of this world: "+strings.Join(config.TimedKinds, ", "))
	f.StringVar(&t.Cluster, "cluster", "", "timed jobs, fungible: GPUs per type, V100:P100:K80 (default 36:36:36)")
	f.StringVar(&t.ServersGPUs, "servers-gpus", "", "timed jobs: GPUs per server per type (V100:P100:K80); fungible: the server size in GPUs (default 8)")
	f.Float64Var(&t.Round, "round", 0, "timed jobs, fungible: round length in seconds (default 360)")
	f.Float64Var(&t.Load, "load", 0, "timed tasks: offered load of the Poisson resampling (default 1.0; 0: the trace's timestamps)")
	f.IntVar(&t.Tasks, "tasks", 0, "timed tasks: number of arrivals (default 150000)")
	f.Float64Var(&t.Cap, "cap", 0, "timed tasks: cut run times to this many seconds (default 14400; 0: none)")
	f.Float64Var(&t.Warmup, "warmup", 0, "timed tasks: seconds from the start left out of the measures (default 14400)")
	f.StringVar(&t.Queue, "queue", "", "timed tasks: queue discipline (default backfill)")
	f.StringArrayVar(&fl.generate, "generate", nil, "timed jobs, fungible: a generated workload jobs=N,lam=S[,multigpu] (Gavel's mix, drawn per seed), added to --traces; repeatable")
}

// apply writes the flags the user set over the config's eval section.
func (fl *evalFlags) apply(f *pflag.FlagSet, ec *config.EvalConfig) {
	t := fl.timed
	set := map[string]func(){
		"policies":     func() { ec.Policies = splitList(fl.policies) },
		"traces":       func() { ec.Traces = splitList(fl.traces) },
		"seeds":        func() { ec.Seeds = fl.seeds },
		"tune":         func() { ec.Tune = fl.tune },
		"out":          func() { ec.Out = fl.out },
		"nodes":        func() { ec.Nodes = fl.nodes },
		"traces-dir":   func() { ec.TracesDir = fl.tdir },
		"parallelism":  func() { ec.Parallelism = fl.parallelism },
		"no-paper":     func() { ec.PaperOverlay = !fl.noPaper },
		"baseline":     func() { ec.Baseline = fl.baseline },
		"timed":        func() { ec.Timed.Kind = t.Kind },
		"cluster":      func() { ec.Timed.Cluster = t.Cluster },
		"servers-gpus": func() { ec.Timed.ServersGPUs = t.ServersGPUs },
		"round":        func() { ec.Timed.Round = t.Round },
		"load":         func() { ec.Timed.Load = t.Load },
		"tasks":        func() { ec.Timed.Tasks = t.Tasks },
		"cap":          func() { ec.Timed.Cap = t.Cap },
		"warmup":       func() { ec.Timed.Warmup = t.Warmup },
		"queue":        func() { ec.Timed.Queue = t.Queue },
	}
	for name, apply := range set {
		if f.Changed(name) {
			apply()
		}
	}
	if f.Changed("generate") { // after --traces, or instead of the default traces
		if !f.Changed("traces") {
			ec.Traces = nil
		}
		ec.Traces = append(ec.Traces, fl.generate...)
	}
}

func runEval(ctx context.Context, opts *evalOptions) error {
	cfg := opts.Config
	ec := cfg.Eval
	if err := ec.Validate(); err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	resolve, cleanup := policyResolver(cfg, slog.Default(), opts.Shipped)
	defer cleanup()
	learned, cleanupLearned := learnedResolvers(cfg, slog.Default())
	defer cleanupLearned()
	evalOpts := eval.Options{Resolve: resolve, Learned: learned, DefragOnline: &cfg.DefragOnline,
		Force: opts.Force, Log: slog.Default(), Progress: isTerminal(os.Stderr)}
	if len(opts.Shipped) > 0 {
		evalOpts.Fetched = map[string]bool{}
		for dir := range opts.Shipped {
			evalOpts.Fetched[dir] = true
		}
	}
	if opts.Shard != "" {
		return runEvalShard(ctx, opts, evalOpts)
	}
	xc := cfg.Pipeline.Executor
	if xc.Kind == "kubernetes" {
		if eval.LocalOnly(ec.Timed.Kind) {
			return fmt.Errorf("eval: --timed %s runs on the local executor only (docs/distributed.md)", ec.Timed.Kind)
		}
		for _, p := range ec.Policies {
			if ref, err := eval.ParsePolicyRef(p); err == nil && ref.Kind == eval.Checkpoint {
				return fmt.Errorf("eval: policy %q: the kubernetes executor's pods cannot read a local checkpoint; publish it and name MODEL@VERSION", p)
			}
		}
	}
	x, err := executor.New(xc, cfg.Registry, slog.Default())
	if err != nil {
		return err
	}
	// Locally one shard: its runs already fill every core.
	evalOpts.Shards = 1
	if xc.Kind == "kubernetes" {
		evalOpts.Shards = xc.ShardCount(math.MaxInt32)
	}
	evalOpts.Remote = func(ctx context.Context, n int, local func(context.Context, int) ([]byte, error)) ([][]byte, error) {
		w := executor.Work{Name: "eval", Shards: n, Local: local, Args: opts.Args}
		// As a local eval shows its runs: a bar on a terminal, else a log line per change.
		if xc.Kind == "kubernetes" && evalOpts.Progress {
			bar := progressbar.NewOptions(n, progressbar.OptionSetDescription("eval shards"),
				progressbar.OptionSetWriter(os.Stderr), progressbar.OptionShowCount(),
				progressbar.OptionClearOnFinish(), progressbar.OptionShowElapsedTimeOnFinish())
			defer bar.Finish()
			w.Progress = func(done, _ int) { bar.Set(done) }
		}
		return x.Run(ctx, w)
	}
	if ec.Timed.Kind != "" {
		m, err := eval.RunTimed(ctx, ec, evalOpts)
		if err != nil {
			return err
		}
		fmt.Fprintf(opts.Out, "report: %s/report.html (%d runs in %.1f s)\n", ec.Out, m.Runs(), m.WallSeconds)
		return nil
	}
	m, err := eval.Run(ctx, ec, evalOpts)
	if err != nil {
		return err
	}
	fmt.Fprintf(opts.Out, "report: %s/report.html (%d runs in %.1f s)\n",
		ec.Out, len(m.Results)*len(m.Seeds), m.WallSeconds)
	return nil
}

// runEvalShard runs one shard and stores its part.
func runEvalShard(ctx context.Context, opts *evalOptions, evalOpts eval.Options) error {
	sh, err := eval.ParseShard(opts.Shard)
	if err != nil {
		return fmt.Errorf("--shard: %w", err)
	}
	return storeShard(ctx, opts.Out, opts.Config.Registry, sh, opts.Part, func(ctx context.Context) ([]byte, error) {
		return eval.RunShard(ctx, opts.Config.Eval, evalOpts, sh)
	})
}

// storeShard is an executor pod's work: it checks the store first (a pod without access fails
// in seconds, not after its work), runs the shard and writes its part under prefix; the
// store's deadline bounds each store call.
func storeShard(ctx context.Context, out io.Writer, store config.RegistryConfig, sh eval.Shard, prefix string,
	run func(context.Context) ([]byte, error)) error {
	check, cancel := context.WithTimeout(ctx, store.Deadline)
	defer cancel()
	if err := executor.CheckStore(check, store, prefix); err != nil {
		return fmt.Errorf("shard %s: the parts' store: %w", sh, err)
	}
	part, err := run(ctx)
	if err != nil {
		return err
	}
	ctx, cancel = context.WithTimeout(ctx, store.Deadline)
	defer cancel()
	if err := executor.WritePart(ctx, store, prefix, sh.Index, part); err != nil {
		return fmt.Errorf("shard %s: %w", sh, err)
	}
	fmt.Fprintf(out, "shard %s: %s\n", sh, executor.PartKey(prefix, sh.Index, part))
	return nil
}

func splitList(xs []string) []string {
	var out []string
	for _, x := range xs {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// policyResolver resolves heuristics through eval, checkpoints through nn (each loaded once,
// its placers sharing the network) and registry references by pulling the version into a
// temporary directory, then loading it as a checkpoint; a checkpoint in shipped (DIR to
// store key) is fetched from the store first. cleanup removes what was pulled or fetched.
func policyResolver(cfg config.Config, log *slog.Logger, shipped map[string]string) (resolve eval.Resolver, cleanup func()) {
	// Eval already runs one simulation per core; libtorch threads on top would only contend.
	if cfg.Device.Threads == 0 && cfg.Eval.Parallelism != 1 {
		cfg.Device.Threads = 1
	}
	pull := &refPuller{cfg: cfg, log: log, shipped: shipped}
	resolve = func(ref eval.PolicyRef) (eval.PolicyFactory, error) {
		if ref.Kind != eval.Checkpoint && ref.Kind != eval.Registry {
			return eval.Heuristics(ref)
		}
		dir, err := pull.dir(ref)
		if err != nil {
			return nil, err
		}
		dev, err := nn.Device(cfg.Device)
		if err != nil {
			return nil, fmt.Errorf("policy %q: %w", ref.Raw, err)
		}
		p, err := nn.LoadPolicy(dir, dev)
		if err != nil {
			return nil, fmt.Errorf("policy %q: %w", ref.Raw, err)
		}
		return func() (sim.Placer, error) { return p.NewPlacer(), nil }, nil
	}
	return resolve, pull.cleanup
}

// refPuller finds a checkpoint reference's directory: its own, or the registry version or
// shipped checkpoint fetched into one temporary directory, which cleanup removes.
type refPuller struct {
	cfg     config.Config
	log     *slog.Logger
	shipped map[string]string
	pulled  string
}

func (p *refPuller) dir(ref eval.PolicyRef) (string, error) {
	key, ship := p.shipped[ref.Dir]
	if ref.Kind == eval.Checkpoint && !ship {
		return ref.Dir, nil
	}
	if p.pulled == "" {
		var err error
		if p.pulled, err = os.MkdirTemp("", "schedrl-eval-pull-"); err != nil {
			return "", fmt.Errorf("policy %q: %w", ref.Raw, err)
		}
	}
	if ref.Kind == eval.Checkpoint {
		dest := filepath.Join(p.pulled, "shipped", path.Base(key))
		if err := executor.FetchCheckpoint(context.Background(), p.cfg.Registry, key, dest); err != nil {
			return "", fmt.Errorf("policy %q: %w", ref.Raw, err)
		}
		return dest, nil
	}
	dest := filepath.Join(p.pulled, ref.Name+"@"+ref.Tag)
	if _, err := pullInto(context.Background(), p.cfg.Registry, ref.Raw, dest, true, p.log); err != nil {
		return "", fmt.Errorf("policy %q: %w", ref.Raw, err)
	}
	return dest, nil
}

func (p *refPuller) cleanup() {
	if p.pulled != "" {
		os.RemoveAll(p.pulled)
	}
}
