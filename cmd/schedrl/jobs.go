package main

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/schedrl/schedrl/fungible"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/internal/inputfile"
	"github.com/schedrl/schedrl/jobs"
	"github.com/schedrl/schedrl/tasks"
)

// newJobsCmd is `schedrl jobs`: one subcommand per world of jobs in time, each with only the
// flags that apply to it. The command alone still takes the flags of every world and picks
// the world from them (the old spelling, runJobs), for one release, with a notice on stderr.
func newJobsCmd(runF func(context.Context, *jobsOptions) error) *cobra.Command {
	if runF == nil {
		runF = runJobs
	}
	opts := &jobsOptions{}
	cmd := &cobra.Command{
		Use:   "jobs",
		Short: "Simulate jobs in time: openb tasks, Gavel's DL jobs on GPU types, or whole allocations on servers (fungible)",
		Long: "One subcommand per world:\n" +
			"  openb     openb tasks on an openb cluster: arrivals, a queue, placement, trace run times (docs/timed.md)\n" +
			"  gavel     Gavel's DL jobs on GPU types in rounds with queue policies and preemption; --compat gavel is\n" +
			"            Gavel's simulator (docs/jobs.md)\n" +
			"  fungible  the same DL jobs as whole allocations (GPUs, CPUs, memory) on servers: Synergy's rules, Gavel's\n" +
			"            LPs, multi-agent (MAIFS) checkpoints (docs/fungible.md, docs/maifs.md)\n" +
			"The old spelling, schedrl jobs with the flags of every world (the world picked from them), still runs\n" +
			"for one release and names on stderr the subcommand that replaces it.",
		Example: "  schedrl jobs openb --trace data/openb/openb_pod_list_default.csv --load 1.0 --tasks 50000 --warmup 3600\n" +
			"  schedrl jobs gavel --trace data/gavel/reference/gen-8x3-lam3600-seed0.trace --cluster 8:8:8 --policy fifo --round 360 --window 0-300 --seed 0 --compat gavel --json\n" +
			"  schedrl jobs fungible --policy synergy-tune --generate jobs=1000,lam=1200,multigpu --seed 0",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			opts.Out, opts.Err, opts.Config = cmd.OutOrStdout(), cmd.ErrOrStderr(), cfg
			return runF(cmd.Context(), opts)
		},
	}
	cmd.AddCommand(newJobsOpenbCmd(nil), newJobsGavelCmd(nil), newJobsFungibleCmd(nil))
	addLegacyJobsFlags(cmd.Flags(), opts)
	return cmd
}

// jobsOptions are the flags of the old single `schedrl jobs`, every world's at once.
type jobsOptions struct {
	Out         io.Writer
	Err         io.Writer // the notice naming the subcommand; nil: stderr
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
	Config      config.Config // device and registry, for a checkpoint policy or placer
}

// fungibleOptions are the old command's flags that only the fungible world (and --generate)
// reads.
type fungibleOptions struct {
	Generate string
	Order    string
	Profiles string
	Mapping  string
	Decode   string // a multi-agent policy's decoder (maifsDecodes)
}

// addLegacyJobsFlags adds the old command's flags, hidden: the help shows the subcommands.
func addLegacyJobsFlags(f *pflag.FlagSet, opts *jobsOptions) {
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
	opts.Openb = defaultOpenbJobsOptions()
	addOpenbJobsFlags(f, &opts.Openb, "openb traces: ")
	f.StringVar(&opts.Openb.Log, "log", "", "write the decision log here: version 2 for openb and Gavel traces, the fungible world's log of whole allocations with --servers-gpus N (docs/decision-log.md)")
	markOutput(f, "log", fileOutput)
	f.VisitAll(func(fl *pflag.Flag) { fl.Hidden = true })
}

// runJobs is the old spelling without cobra: it picks the world from the options, says on
// stderr which subcommand replaces it, and runs that world.
func runJobs(ctx context.Context, opts *jobsOptions) error {
	world, err := opts.world()
	if err != nil {
		return err
	}
	notice := cmp.Or[io.Writer](opts.Err, os.Stderr)
	also := ""
	if world == "openb" {
		also = ", where --policy is --queue"
	}
	fmt.Fprintf(notice, "schedrl: notice: `schedrl jobs` with every world's flags goes after the next release; this run is `schedrl jobs %s`%s (see schedrl jobs %s --help)\n", world, also, world)
	switch world {
	case "fungible":
		fo, err := opts.fungible()
		if err != nil {
			return err
		}
		return runJobsFungible(ctx, fo)
	case "openb":
		return runOpenbJobs(ctx, opts.openb())
	}
	if opts.Load != 0 {
		return errors.New("jobs: --load resamples openb pod lists; a Gavel trace keeps its arrivals")
	}
	return runJobsGavel(ctx, opts.gavel())
}

// world is the subcommand the old spelling's options amount to: fungible for its rules, LPs,
// checkpoints or one server size; openb for an openb pod list or node list; gavel otherwise.
func (opts *jobsOptions) world() (string, error) {
	if isFungible(opts) {
		return "fungible", nil
	}
	if (opts.Trace == "") == (opts.Fungible.Generate == "") {
		return "", errors.New("jobs: --trace or --generate is required, one of them")
	}
	if opts.Nodes != "" {
		return "openb", nil
	}
	if opts.Trace != "" {
		openb, err := isOpenbPods(opts.Trace)
		if err != nil {
			return "", fmt.Errorf("jobs: %w", err)
		}
		if openb {
			return "openb", nil
		}
	}
	return "gavel", nil
}

// openb is the old spelling as `jobs openb`: --policy names the queue discipline, and --nodes
// defaults to the openb GPU node list.
func (opts *jobsOptions) openb() *openbJobsOptions {
	o := opts.Openb
	o.Out, o.Trace, o.Load, o.Seed, o.JSON, o.Config = opts.Out, opts.Trace, opts.Load, opts.Seed, opts.JSON, opts.Config
	o.Nodes = cmp.Or(opts.Nodes, filepath.Join("data", "openb", "openb_node_list_gpu_node.csv"))
	o.Queue = cmp.Or(opts.Policy, o.Queue)
	return &o
}

// gavel is the old spelling as `jobs gavel`.
func (opts *jobsOptions) gavel() *jobsGavelOptions {
	return &jobsGavelOptions{Out: opts.Out, Jobs: opts.jobSource(), Trace: opts.Trace, Cluster: opts.Cluster, ServersGPUs: opts.ServersGPUs,
		Policy: cmp.Or(opts.Policy, "fifo"), Round: opts.Round, Window: opts.Window, Seed: opts.Seed, Compat: opts.Compat, JSON: opts.JSON,
		Log: opts.Openb.Log}
}

// fungible is the old spelling as `jobs fungible`, refusing the flags of the other worlds.
func (opts *jobsOptions) fungible() (*jobsFungibleOptions, error) {
	switch {
	case opts.Compat != "":
		return nil, fmt.Errorf("jobs: --compat %s reproduces Gavel's GPU-type world; the fungible world (--servers-gpus N, --generate, %s) has no compat mode", opts.Compat, strings.Join(fungibleRules, ", "))
	case opts.Window != "":
		return nil, fmt.Errorf("jobs: --window counts a window in the GPU-type world; the fungible world counts every job")
	case opts.Load != 0:
		return nil, fmt.Errorf("jobs: --load resamples openb pod lists; the fungible world takes --generate or a Gavel trace")
	}
	serverGPUs := fungible.ServerGPUs
	if opts.ServersGPUs != "" {
		n, err := strconv.Atoi(strings.TrimSpace(opts.ServersGPUs))
		if err != nil {
			return nil, fmt.Errorf("jobs: --servers-gpus %q: the fungible world takes one server size in GPUs, e.g. 8", opts.ServersGPUs)
		}
		serverGPUs = n
	}
	fo := opts.Fungible
	return &jobsFungibleOptions{Out: opts.Out, Jobs: opts.jobSource(), Trace: opts.Trace, Cluster: opts.Cluster, ServerGPUs: serverGPUs,
		Policy: opts.Policy, Order: fo.Order, Decode: fo.Decode, Round: opts.Round, Seed: opts.Seed, JSON: opts.JSON, Log: opts.Openb.Log,
		Config: opts.Config}, nil
}

func (opts *jobsOptions) jobSource() jobSource {
	return jobSource{Generate: opts.Fungible.Generate, Throughputs: opts.Throughputs, Profiles: opts.Fungible.Profiles, Mapping: opts.Fungible.Mapping}
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
