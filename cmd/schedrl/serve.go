package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/schedrl/schedrl/defrag"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/kube"
	"github.com/schedrl/schedrl/kube/descheduler"
	"github.com/schedrl/schedrl/kube/extender"
	"github.com/schedrl/schedrl/policy"
	"github.com/schedrl/schedrl/registry"
	"github.com/schedrl/schedrl/sim"
)

// newServeCmd groups the commands that put policies in front of a real cluster.
func newServeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run policies against a Kubernetes cluster: scheduler extender, defrag controller",
	}
	cmd.AddCommand(newServeExtenderCmd(nil), newServeDefragCmd(nil))
	return cmd
}

// kubeFlags are the connection settings both controllers share.
type kubeFlags struct {
	Kubeconfig  string // empty: in-cluster service account
	QPS         float32
	Burst       int
	APITimeout  time.Duration
	SyncTimeout time.Duration
}

func (k *kubeFlags) add(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&k.Kubeconfig, "kubeconfig", "", "kubeconfig file (empty: the pod's service account, in-cluster)")
	f.Float32Var(&k.QPS, "kube-qps", 100, "client requests per second to the API server")
	f.IntVar(&k.Burst, "kube-burst", 200, "client request burst to the API server")
	f.DurationVar(&k.APITimeout, "api-timeout", 10*time.Second, "deadline of each API server request")
	f.DurationVar(&k.SyncTimeout, "sync-timeout", 2*time.Minute, "how long to wait for the first list of nodes and pods")
}

func (k kubeFlags) client() (kubernetes.Interface, error) {
	var cfg *rest.Config
	var err error
	if k.Kubeconfig == "" {
		if cfg, err = rest.InClusterConfig(); errors.Is(err, rest.ErrNotInCluster) {
			return nil, errors.New("kubernetes client: not running in a cluster (no service account): pass --kubeconfig FILE (e.g. ~/.kube/config)")
		}
	} else {
		cfg, err = clientcmd.BuildConfigFromFlags("", k.Kubeconfig)
	}
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	cfg.QPS, cfg.Burst, cfg.Timeout = k.QPS, k.Burst, k.APITimeout
	return kubernetes.NewForConfig(cfg)
}

// workloadFlags name the fragment measure's typical shapes and the seed, as `schedrl sim`.
type workloadFlags struct {
	Pods     string
	Coverage float64
	Seed     uint64
}

func (w *workloadFlags) add(cmd *cobra.Command, d config.SimConfig) {
	f := cmd.Flags()
	f.StringVar(&w.Pods, "pods", d.Pods, "openb pod list whose typical task shapes define the fragment measure")
	f.Float64Var(&w.Coverage, "coverage", d.Coverage, "share of tasks the typical shapes cover")
	f.Uint64Var(&w.Seed, "seed", d.Seed, "seed of the node tie order and the policy's random draws (as schedrl sim --seed)")
}

func (w workloadFlags) model() (*sim.FragModel, error) {
	tasks, err := sim.LoadTasks(w.Pods)
	if err != nil {
		return nil, fmt.Errorf("--pods: %w (a relative default resolves against the working folder: run from the repository root or pass --pods FILE)", err)
	}
	m, err := sim.TypicalShapes(tasks, w.Coverage)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", w.Pods, err)
	}
	return m, nil
}

// serveExtenderOptions configure `schedrl serve extender`.
type serveExtenderOptions struct {
	kubeFlags
	workloadFlags
	decisionLogFlags
	shadowFlags
	extender.Endpoint
	MaxBody int64
	Policy  string
	Model   string // registry reference; overrides Policy
	Config  config.Config
	Log     *slog.Logger
}

func newServeExtenderCmd(runF func(context.Context, *serveExtenderOptions) error) *cobra.Command {
	if runF == nil {
		runF = runServeExtender
	}
	opts := &serveExtenderOptions{}
	d := config.Default()
	cmd := &cobra.Command{
		Use:   "extender",
		Short: "Serve the kube-scheduler extender protocol (filter, prioritize, bind) with a placer",
		Long: "Keeps a model of the cluster from the API server (nodes with their GPUs, bound pods with\n" +
			"their GPU indices), places each pod kube-scheduler asks about with --policy or a registry\n" +
			"--model, and binds it with the GPU indices as annotation alibabacloud.com/gpu-index.\n" +
			"Serves /filter, /prioritize, /bind, /healthz and /metrics. --shadow asks a candidate model the same\n" +
			"questions off the request path and records both answers; --model-poll switches to the version\n" +
			"--model names when its alias moves. See docs/deploy.md.",
		Example: "  schedrl serve extender --policy fgd --kubeconfig ~/.kube/config\n" +
			"  schedrl serve extender --model placement@champion --listen :8888 --tls-cert-file tls.crt --tls-key-file tls.key \\\n" +
			"      --tls-client-ca-file scheduler-ca.crt --metrics-listen :9090\n" +
			"  schedrl serve extender --model placement@champion --shadow placement@candidate --shadow-log shadow/",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			opts.Config, opts.Log = cfg, slog.Default()
			return runF(cmd.Context(), opts)
		},
	}
	opts.kubeFlags.add(cmd)
	opts.workloadFlags.add(cmd, d.Sim)
	opts.decisionLogFlags.add(cmd)
	opts.shadowFlags.add(cmd)
	f := cmd.Flags()
	f.StringVar(&opts.Listen, "listen", extender.DefaultListen, "address to serve the verbs and /healthz on (loopback unless asked: e.g. :8888 for every interface)")
	f.StringVar(&opts.MetricsListen, "metrics-listen", "", "address to serve /metrics on, plain HTTP (empty: beside the verbs on --listen)")
	f.StringVar(&opts.CertFile, "tls-cert-file", "", "PEM certificate to serve over TLS (kube-scheduler's enableHTTPS: true)")
	f.StringVar(&opts.KeyFile, "tls-key-file", "", "PEM key of --tls-cert-file")
	f.StringVar(&opts.ClientCAFile, "tls-client-ca-file", "", "PEM CA bundle: the verbs answer only clients with a certificate it signed (the scheduler's tlsConfig certFile)")
	f.Int64Var(&opts.MaxBody, "max-body", extender.DefaultMaxBody, "largest request body in bytes; a larger one gets 413")
	f.StringVar(&opts.Policy, "policy", "fgd", "heuristic placer: "+fmt.Sprint(policy.Placers()))
	f.StringVar(&opts.Model, "model", "", "registry reference of a placement checkpoint (e.g. placement@champion); pulled and verified, overrides --policy")
	config.AddFlags(f, "")
	return cmd
}

// runServeExtender serves until ctx ends (execute cancels it on SIGINT/SIGTERM).
func runServeExtender(ctx context.Context, opts *serveExtenderOptions) error {
	if err := opts.Endpoint.Validate(); err != nil {
		return err
	}
	if err := opts.shadowFlags.validate(); err != nil {
		return err
	}
	placer, v, cleanup, err := servePlacer(ctx, opts)
	if err != nil {
		return err
	}
	label := opts.Policy
	if opts.Model != "" {
		label = modelLabel(v)
	}
	cleanupServing := cleanup
	defer func() { cleanupServing() }()
	shadowOpts, shadowCleanup, err := opts.shadowFlags.options(ctx, opts.Config, opts.Seed, opts.Log)
	if err != nil {
		return err
	}
	defer shadowCleanup()
	model, err := opts.workloadFlags.model()
	if err != nil {
		return err
	}
	client, err := opts.kubeFlags.client()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	mirror := kube.NewMirror(client, kube.MirrorOptions{Model: model, TieSeed: opts.Seed, Log: opts.Log})
	if err := mirror.Start(ctx, opts.SyncTimeout); err != nil {
		return err
	}
	srv := extender.New(extender.Options{Client: client, Mirror: mirror, Placer: placer, Seed: opts.Seed,
		Model: label, APITimeout: opts.APITimeout, MaxBody: opts.MaxBody, Shadow: shadowOpts, Log: opts.Log})
	defer srv.Close()
	dlog, stopLog, err := opts.decisionLogFlags.start(ctx, client, model, opts.Seed, opts.SyncTimeout,
		map[string]string{"policy": placer.Name(), "model": label}, srv.Metrics(), opts.Config.Registry.S3, opts.Log)
	if err != nil {
		return err
	}
	defer stopLog()
	if opts.Model != "" && opts.ModelPoll > 0 {
		// The switcher owns the serving model's folder from here, and removes it as it ends.
		sw := newModelSwitcher(opts.Config, opts.Model, v, srv, cleanup, opts.Log)
		if dlog != nil {
			// Each decision log file names the model that decided in it.
			sw.onSwitch = func(label string) {
				if err := dlog.SetMeta("model", label); err != nil {
					opts.Log.Warn("decision log: new file for the switched model", "err", err)
				}
			}
		}
		cleanupServing = func() {}
		swDone := make(chan struct{})
		go func() { defer close(swDone); sw.run(ctx, opts.ModelPoll) }()
		defer func() { cancel(); <-swDone }()
	}
	return srv.Serve(ctx, opts.Endpoint, func(verbs, metrics net.Addr) {
		opts.Log.Info("extender serving", "addr", verbs.String(), "tls", opts.TLS(), "client-certs", opts.ClientAuth(),
			"metrics", metrics, "placer", placer.Name(), "model", label, "shadow", opts.Shadow)
		if !opts.TLS() && !isLoopback(verbs) {
			opts.Log.Warn("extender serving plain HTTP beyond loopback: anyone who reaches it can bind pods; see docs/deploy.md for TLS")
		}
	})
}

// isLoopback reports whether addr is a loopback address.
func isLoopback(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// servePlacer is the heuristic, or the registry model pulled (every file's sha256 verified)
// into a temporary folder and loaded through nn, with its version.
func servePlacer(ctx context.Context, opts *serveExtenderOptions) (sim.Placer, registry.Version, func(), error) {
	if opts.Model == "" {
		p, err := policy.NewPlacer(opts.Policy)
		return p, registry.Version{}, func() {}, err
	}
	return loadModelPlacer(ctx, opts.Config, opts.Model, opts.Log)
}

// serveDefragOptions configure `schedrl serve defrag`.
type serveDefragOptions struct {
	kubeFlags
	workloadFlags
	Method      string // heuristic planner
	Model       string // registry reference of a defrag checkpoint; overrides Method
	Placer      string // placement policy the plan assumes re-places evicted pods
	Budget      int
	Samples     int
	Interval    time.Duration
	Evict       bool
	PerHour     int
	GracePeriod int64 // < 0: each pod's own
	Once        bool
	Config      config.Config
	Log         *slog.Logger
}

func newServeDefragCmd(runF func(context.Context, *serveDefragOptions) error) *cobra.Command {
	if runF == nil {
		runF = runServeDefrag
	}
	opts := &serveDefragOptions{}
	d := config.Default()
	cmd := &cobra.Command{
		Use:   "defrag",
		Short: "Defragmentation controller: plan migrations every interval, evict through the Eviction API",
		Long: "Every --interval, snapshots the cluster from the API server, plans at most --budget migrations\n" +
			"with --method (a heuristic) or a registry --model (the defrag agent), and, with --evict, evicts\n" +
			"the pods to move through the Eviction API (PodDisruptionBudgets respected; their owners\n" +
			"re-create them and the scheduler with the extender places them). Without --evict (the default)\n" +
			"it only reports the plan, as Events on the pods and in its log. See docs/deploy.md.",
		Example: "  schedrl serve defrag --method frag-one-pod --budget 10 --interval 10m\n" +
			"  schedrl serve defrag --model defrag@champion --evict --max-evictions-per-hour 30",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			opts.Config, opts.Log = cfg, slog.Default()
			return runF(cmd.Context(), opts)
		},
	}
	opts.kubeFlags.add(cmd)
	opts.workloadFlags.add(cmd, d.Sim)
	f := cmd.Flags()
	f.StringVar(&opts.Method, "method", "frag-one-pod", "heuristic planner: "+fmt.Sprint(defrag.Methods()))
	f.StringVar(&opts.Model, "model", "", "registry reference of a defrag checkpoint (e.g. defrag@champion); pulled and verified, overrides --method")
	f.StringVar(&opts.Placer, "placer", d.Defrag.Placer, "placement policy the extender runs (the plan's re-placements)")
	f.IntVar(&opts.Budget, "budget", 10, "migrations per round at most")
	f.IntVar(&opts.Samples, "samples", d.Defrag.Samples, "sample K plans and keep the best")
	f.DurationVar(&opts.Interval, "interval", 10*time.Minute, "time between rounds")
	f.BoolVar(&opts.Evict, "evict", false, "carry the plan out (default: dry-run, report only)")
	f.IntVar(&opts.PerHour, "max-evictions-per-hour", 30, "evictions per hour at most, across rounds")
	f.Int64Var(&opts.GracePeriod, "grace-period", -1, "grace period of the evicted pods in seconds (-1: each pod's own)")
	f.BoolVar(&opts.Once, "once", false, "play one round and exit")
	config.AddFlags(f, "")
	return cmd
}

// runServeDefrag runs rounds until ctx ends (one with Once).
func runServeDefrag(ctx context.Context, opts *serveDefragOptions) error {
	planner, cleanup, err := defragPlanner(ctx, opts)
	if err != nil {
		return err
	}
	defer cleanup()
	placer, err := policy.NewPlacer(opts.Placer)
	if err != nil {
		return err
	}
	model, err := opts.workloadFlags.model()
	if err != nil {
		return err
	}
	client, err := opts.kubeFlags.client()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	mirror := kube.NewMirror(client, kube.MirrorOptions{Model: model, TieSeed: opts.Seed, Log: opts.Log})
	if err := mirror.Start(ctx, opts.SyncTimeout); err != nil {
		return err
	}
	dopts := defragOptions(opts.Config)
	dopts.Budget = opts.Budget
	var grace *int64
	if opts.GracePeriod >= 0 {
		grace = &opts.GracePeriod
	}
	c, err := descheduler.New(descheduler.Options{Client: client, Mirror: mirror, Planner: planner, Placer: placer,
		Defrag: dopts, Samples: opts.Samples, Seed: opts.Seed, Interval: opts.Interval, Evict: opts.Evict,
		MaxPerHour: opts.PerHour, GracePeriod: grace, APITimeout: opts.APITimeout, Log: opts.Log})
	if err != nil {
		return err
	}
	if opts.Once {
		_, err := c.Once(ctx)
		return err
	}
	return c.Run(ctx)
}

// defragPlanner is the heuristic, or the registry's defrag checkpoint loaded through nn.
func defragPlanner(ctx context.Context, opts *serveDefragOptions) (defrag.Planner, func(), error) {
	if opts.Model == "" {
		p, err := defrag.NewPlanner(opts.Method)
		return p, func() {}, err
	}
	dir, _, err := pullModel(ctx, opts.Config.Registry, opts.Model, opts.Log)
	if err != nil {
		return nil, func() {}, err
	}
	cleanup := func() { os.RemoveAll(filepath.Dir(dir)) }
	p, err := modelPlanner(opts.Config, dir)
	if err != nil {
		cleanup()
		return nil, func() {}, fmt.Errorf("model %s: %w", opts.Model, err)
	}
	return p, cleanup, nil
}
