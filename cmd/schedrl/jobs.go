package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/schedrl/schedrl/internal/atomicfile"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/internal/inputfile"
	"github.com/schedrl/schedrl/jobs"
	"github.com/schedrl/schedrl/sim"
	"github.com/schedrl/schedrl/tasks"
)

// jobsOptions are the flags of `schedrl jobs`.
type jobsOptions struct {
	Out         io.Writer
	Trace       string
	Cluster     string
	ServersGPUs string
	Nodes       string  // openb node list: an openb cluster instead of --cluster
	Load        float64 // offered load for Poisson resampling of an openb pod list
	Openb       openbJobsOptions
	Fungible    fungibleOptions
	Throughputs string
	Policy      string
	Round       float64
	Window      string
	Seed        uint64
	Compat      string
	JSON        bool
	Config      config.Config // device and registry, for a multi-agent checkpoint policy
}

// jobsSummary is the --json object.
type jobsSummary struct {
	Trace       string             `json:"trace"`
	Policy      string             `json:"policy"`
	Compat      string             `json:"compat,omitempty"`
	Cluster     string             `json:"cluster"`
	Seed        uint64             `json:"seed"`
	Window      [2]int             `json:"window"`
	RoundS      float64            `json:"round_s"`
	Jobs        int                `json:"jobs"`
	AvgJCT      float64            `json:"avg_jct_s"`
	Makespan    float64            `json:"makespan_s"`
	WindowS     float64            `json:"window_s"`
	Utilization float64            `json:"utilization"`
	Rounds      int                `json:"rounds"`
	RhoMean     float64            `json:"ftf_rho_mean"` // finish-time fairness: JCT / JCT alone on a 1/N share
	RhoMax      float64            `json:"ftf_rho_max"`
	RhoAboveOne float64            `json:"ftf_rho_above_one"` // share of the jobs with rho > 1
	Dropped     []int              `json:"dropped,omitempty"`
	Log         string             `json:"log,omitempty"`
	WallSeconds float64            `json:"wall_seconds"`
	JCT         map[string]float64 `json:"jct_s"`
}

func newJobsCmd(runF func(context.Context, *jobsOptions) error) *cobra.Command {
	if runF == nil {
		runF = runJobs
	}
	opts := &jobsOptions{}
	cmd := &cobra.Command{
		Use:   "jobs",
		Short: "Simulate DL jobs in time: rounds, queue policies, preemption (Gavel's model, or Gavel's simulator with --compat gavel)",
		Long: "Runs a Gavel job trace (10-field or the msr 7-field form) on a V100:P100:K80 cluster in rounds of\n" +
			"--round seconds with a queue policy (" + strings.Join(jobs.Policies(), ", ") + ";\n" +
			"Gavel's names are aliases) and prints JCT, makespan and utilization over the jobs of --window.\n" +
			"--compat gavel reproduces Gavel's simulator, quirks included (fifo, max_min_fairness,\n" +
			"max_min_fairness_perf). An openb pod CSV as --trace, or --nodes, runs the openb timed-task world.\n" +
			"--servers-gpus N, a fungible rule (" + strings.Join(fungibleRules, ", ") + ") or max_min_fairness_packed runs\n" +
			"the fungible world: servers with GPUs, CPUs and memory, whole allocations checked against capacity; Gavel's\n" +
			"LPs (max_min_fairness, _perf, _packed) run there too, with fixed demands (docs/fungible.md).\n" +
			"See docs/jobs.md.",
		Example: "  schedrl jobs --trace data/gavel/reference/gen-8x3-lam3600-seed0.trace --cluster 8:8:8 --policy fifo --round 360 --window 0-300 --seed 0 --compat gavel --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			opts.Out, opts.Config = cmd.OutOrStdout(), cfg
			return runF(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Trace, "trace", "", "job trace: a Gavel .trace file, or an openb pod list CSV")
	f.StringVar(&opts.Cluster, "cluster", "36:36:36", "GPUs per type, V100:P100:K80")
	f.StringVar(&opts.ServersGPUs, "servers-gpus", "", "GPUs per server per type, V100:P100:K80 (default one GPU per server); one number (8) runs the fungible world: servers of that many GPUs with 3 CPUs and 62.5 GB per GPU")
	f.StringVar(&opts.Nodes, "nodes", "", "openb node list CSV: an openb cluster instead of --cluster")
	f.Float64Var(&opts.Load, "load", 0, "openb traces: offered load for Poisson resampling (GPU-time demanded per second over capacity); 0 keeps the trace's timestamps")
	f.StringVar(&opts.Throughputs, "throughputs", filepath.Join("data", "gavel", "simulation_throughputs.json"), "Gavel's throughput table")
	f.StringVar(&opts.Policy, "policy", "", "queue policy: "+strings.Join(jobs.Policies(), ", ")+
		" (default fifo); fungible world: "+strings.Join(fungibleRules, ", ")+" and max_min_fairness_packed too (the queue policies and Gavel's LPs there hold fixed demands),"+
		" and a multi-agent checkpoint, ckpt:DIR or MODEL@ALIAS (schedrl maifs-bc);"+
		" openb traces: "+strings.Join(tasks.Queues(), ", ")+" (default backfill)")
	f.StringVar(&opts.Fungible.Generate, "generate", "", "generate Gavel's job mix instead of --trace (both worlds), jobs=N,lam=S[,multigpu] (S: mean seconds between arrivals; seeded by --seed)")
	f.StringVar(&opts.Fungible.Order, "order", "", "fungible world: job order of "+strings.Join(fungibleRules, ", ")+": fifo, sjf, srtf or tiresias-las (default fifo)")
	f.StringVar(&opts.Fungible.Profiles, "profiles", filepath.Join("data", "synergy", "profiles.json"), "fungible world and --generate: Synergy's CPU and memory profiles")
	f.StringVar(&opts.Fungible.Mapping, "synergy-map", filepath.Join("data", "fungible", "gavel_synergy_models.csv"), "fungible world and --generate: Gavel job type to Synergy model table (its job types are the generator's)")
	f.Float64Var(&opts.Round, "round", 360, "round length in seconds")
	f.StringVar(&opts.Window, "window", "", "count the jobs with index S <= i < E, as S-E (Gavel's -s/-e); default every job")
	f.Uint64Var(&opts.Seed, "seed", 0, "seed (Gavel's --seed in compat mode)")
	f.StringVar(&opts.Compat, "compat", "", "\"gavel\": reproduce Gavel's simulator")
	f.BoolVar(&opts.JSON, "json", false, "print a JSON object")
	f.StringVar(&opts.Fungible.Decode, "maifs-decode", "", "fungible world, multi-agent checkpoint policy: decoder, "+strings.Join(maifsDecodes, " or ")+" (the ablation without the coordination graph; default ordered)")
	config.AddFlags(f, "")
	addOpenbJobsFlags(f, &opts.Openb)
	return cmd
}

// runJobs is the command without cobra.
func runJobs(ctx context.Context, opts *jobsOptions) error {
	w := opts.Out
	start := time.Now()
	if isFungible(opts) {
		return runJobsFungible(opts, w)
	}
	if (opts.Trace == "") == (opts.Fungible.Generate == "") {
		return errors.New("jobs: --trace or --generate is required, one of them")
	}
	openb := false
	if opts.Trace != "" {
		var err error
		if openb, err = isOpenbPods(opts.Trace); err != nil {
			return fmt.Errorf("jobs: %w", err)
		}
	}
	if opts.Nodes != "" || openb {
		return runJobsOpenb(ctx, opts, w)
	}
	if opts.Policy == "" {
		opts.Policy = "fifo"
	}
	if opts.Load != 0 {
		return errors.New("jobs: --load resamples openb pod lists; a Gavel trace keeps its arrivals")
	}
	cluster, err := jobs.ParseCluster(opts.Cluster, opts.ServersGPUs)
	if err != nil {
		return fmt.Errorf("jobs: %w", err)
	}
	window, err := parseWindow(opts.Window)
	if err != nil {
		return fmt.Errorf("jobs: --window: %w", err)
	}
	table, err := jobs.LoadThroughputs(opts.Throughputs)
	if err != nil {
		return fmt.Errorf("jobs: %w", err)
	}
	var tr *jobs.Trace
	if opts.Fungible.Generate != "" {
		tr, err = generatedTrace(opts, table)
	} else {
		tr, err = jobs.ReadTrace(opts.Trace)
	}
	if err != nil {
		return fmt.Errorf("jobs: %w", err)
	}
	cfg := jobs.Config{Cluster: cluster, Policy: opts.Policy, Round: opts.Round, Window: window, Seed: opts.Seed, Compat: opts.Compat}
	res, err := runJobsLogged(tr, table, cfg, opts)
	if err != nil {
		return fmt.Errorf("jobs: %w", err)
	}
	if window == [2]int{} {
		window = [2]int{0, len(tr.Jobs)}
	}
	s := jobsSummary{Trace: tr.Path, Policy: opts.Policy, Compat: opts.Compat, Cluster: opts.Cluster, Seed: opts.Seed,
		Window: window, RoundS: opts.Round, Jobs: res.Jobs, AvgJCT: res.AvgJCT, Makespan: res.Makespan, WindowS: res.WindowSpan,
		Utilization: res.Utilization, Rounds: res.Rounds, RhoMean: res.RhoMean, RhoMax: res.RhoMax, RhoAboveOne: res.RhoAboveOne,
		Dropped: res.Dropped, Log: opts.Openb.Log, WallSeconds: time.Since(start).Seconds(),
		JCT: make(map[string]float64, len(res.JCT))}
	for i, v := range res.JCT {
		s.JCT[strconv.Itoa(i)] = v
	}
	if opts.JSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", " ")
		return enc.Encode(s)
	}
	mode := "schedrl rounds"
	if opts.Compat != "" {
		mode = "compat " + opts.Compat
	}
	fmt.Fprintf(w, "%s on %s (%s, round %g s): %d jobs, avg JCT %.0f s (%.2f h), makespan %.0f s, utilization %.3f, finish-time fairness rho mean %.2f max %.2f (%.0f%% above 1), %d rounds, %.2f s\n",
		s.Policy, s.Cluster, mode, s.RoundS, s.Jobs, s.AvgJCT, s.AvgJCT/3600, s.Makespan, s.Utilization, s.RhoMean, s.RhoMax, 100*s.RhoAboveOne, s.Rounds, s.WallSeconds)
	if len(s.Dropped) > 0 {
		sort.Ints(s.Dropped)
		fmt.Fprintf(w, "dropped after %d failed rounds (no JCT, as in Gavel): %v\n", 5, s.Dropped)
	}
	return nil
}

// runJobsLogged runs the DL-job world, with its version-2 decision log (--log) written under
// a temporary name and renamed into place only when the run succeeded.
func runJobsLogged(tr *jobs.Trace, table *jobs.Throughputs, cfg jobs.Config, opts *jobsOptions) (jobs.Result, error) {
	path := opts.Openb.Log
	if path == "" {
		return jobs.Run(tr, table, cfg)
	}
	f, err := atomicfile.Create(path, 0o644)
	if err != nil {
		return jobs.Result{}, err
	}
	defer f.Abort()
	meta := map[string]string{"protocol": "gavel-jobs", "trace": tr.Path, "policy": cfg.Policy, "compat": cfg.Compat,
		"cluster": opts.Cluster, "round_s": fmtFloat(opts.Round), "seed": strconv.FormatUint(cfg.Seed, 10), "throughputs": opts.Throughputs}
	if cfg.Window != [2]int{} {
		meta["window"] = fmt.Sprintf("%d-%d", cfg.Window[0], cfg.Window[1])
	}
	lw, err := sim.NewLogWriter(f, jobs.LogHeader(cfg.Cluster, meta))
	if err != nil {
		return jobs.Result{}, err
	}
	cfg.Log = lw
	res, err := jobs.Run(tr, table, cfg)
	if err != nil {
		return res, err
	}
	return res, f.Commit()
}

// runJobsOpenb hands openb clusters and pod lists to the openb timed-task world: --policy then
// names its queue discipline, and --nodes defaults to the openb GPU node list.
func runJobsOpenb(ctx context.Context, opts *jobsOptions, w io.Writer) error {
	o := opts.Openb
	o.Trace, o.Load, o.Seed, o.JSON, o.Config = opts.Trace, opts.Load, opts.Seed, opts.JSON, opts.Config
	o.Nodes = cmp.Or(opts.Nodes, filepath.Join("data", "openb", "openb_node_list_gpu_node.csv"))
	o.Queue = cmp.Or(opts.Policy, o.Queue)
	return runOpenbJobs(ctx, o, w)
}

// isOpenbPods tells an openb pod list (a CSV whose header names creation_time) from a Gavel trace.
func isOpenbPods(path string) (bool, error) {
	f, err := inputfile.Open(path, inputfile.Trace)
	if err != nil {
		return false, err
	}
	defer f.Close()
	// The header is all that is read: a first line longer than this is no openb header.
	line, err := bufio.NewReader(io.LimitReader(f, 64<<10)).ReadString('\n')
	if err != nil && err != io.EOF {
		return false, fmt.Errorf("%s: %w", path, err)
	}
	return strings.HasPrefix(line, "name,") && strings.Contains(line, "creation_time"), nil
}

// parseWindow reads S-E; "" is every job.
func parseWindow(s string) ([2]int, error) {
	if s == "" {
		return [2]int{}, nil
	}
	a, b, ok := strings.Cut(s, "-")
	start, err1 := strconv.Atoi(strings.TrimSpace(a))
	end, err2 := strconv.Atoi(strings.TrimSpace(b))
	if !ok || err1 != nil || err2 != nil || start < 0 || end <= start {
		return [2]int{}, fmt.Errorf("%q: want S-E with 0 <= S < E, e.g. 0-300", s)
	}
	return [2]int{start, end}, nil
}
