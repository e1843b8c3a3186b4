package main

import (
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
	"github.com/spf13/pflag"

	"github.com/schedrl/schedrl/internal/atomicfile"
	"github.com/schedrl/schedrl/jobs"
	"github.com/schedrl/schedrl/sim"
)

// jobsGavelOptions is `schedrl jobs gavel`: Gavel's DL-job world, jobs on GPU types in rounds.
type jobsGavelOptions struct {
	Out   io.Writer
	Jobs  jobSource
	Trace string // a Gavel trace, or "" with Jobs.Generate
	// Cluster is GPUs per type (V100:P100:K80); ServersGPUs the GPUs per server per type ("":
	// one GPU per server).
	Cluster, ServersGPUs string
	Policy               string
	Round                float64
	Window               string
	Seed                 uint64
	Compat               string
	JSON                 bool
	Log                  string // the version-2 decision log to write ("" none)
}

// jobSource is what both DL-job worlds read their jobs with: Gavel's throughput table, and
// for a generated workload (Generate, seeded by the run's seed) Synergy's profiles and the
// job-type mapping.
type jobSource struct {
	Generate, Throughputs, Profiles, Mapping string
}

// addJobSourceFlags adds --generate and the data-file flags of the DL-job worlds.
func addJobSourceFlags(f *pflag.FlagSet, s *jobSource, profilesUse string) {
	f.StringVar(&s.Generate, "generate", "", "generate Gavel's job mix instead of --trace, jobs=N,lam=S[,multigpu] (S: mean seconds between arrivals; seeded by --seed)")
	f.StringVar(&s.Throughputs, "throughputs", filepath.Join("data", "gavel", "simulation_throughputs.json"), "Gavel's throughput table")
	f.StringVar(&s.Profiles, "profiles", filepath.Join("data", "synergy", "profiles.json"), profilesUse+"Synergy's CPU and memory profiles")
	f.StringVar(&s.Mapping, "synergy-map", filepath.Join("data", "fungible", "gavel_synergy_models.csv"), profilesUse+"Gavel job type to Synergy model table (its job types are the generator's)")
}

// jobsSummary is the --json object of the GPU-type world.
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

func newJobsGavelCmd(runF func(context.Context, *jobsGavelOptions) error) *cobra.Command {
	if runF == nil {
		runF = runJobsGavel
	}
	opts := &jobsGavelOptions{}
	cmd := &cobra.Command{
		Use:   "gavel (--trace FILE | --generate SPEC)",
		Short: "DL jobs on GPU types in rounds: queue policies, preemption (Gavel's model, or Gavel's simulator with --compat gavel)",
		Long: "Runs a Gavel job trace (10-field or the msr 7-field form), or Gavel's generated job mix, on a V100:P100:K80\n" +
			"cluster in rounds of --round seconds with a queue policy (" + strings.Join(jobs.Policies(), ", ") + ";\n" +
			"Gavel's names are aliases) and prints JCT, makespan, utilization and finish-time fairness over the jobs of\n" +
			"--window. --compat gavel reproduces Gavel's simulator, quirks included (fifo, max_min_fairness,\n" +
			"max_min_fairness_perf). See docs/jobs.md.",
		Example: "  schedrl jobs gavel --trace data/gavel/reference/gen-8x3-lam3600-seed0.trace --cluster 8:8:8 --policy fifo --round 360 --window 0-300 --seed 0 --compat gavel --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Out = cmd.OutOrStdout()
			return runF(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Trace, "trace", "", "Gavel job trace (.trace)")
	addJobSourceFlags(f, &opts.Jobs, "--generate: ")
	f.StringVar(&opts.Cluster, "cluster", "36:36:36", "GPUs per type, V100:P100:K80")
	f.StringVar(&opts.ServersGPUs, "servers-gpus", "", "GPUs per server per type, V100:P100:K80 (default one GPU per server)")
	f.StringVar(&opts.Policy, "policy", "fifo", "queue policy: "+strings.Join(jobs.Policies(), ", "))
	f.Float64Var(&opts.Round, "round", 360, "round length in seconds")
	f.StringVar(&opts.Window, "window", "", "count the jobs with index S <= i < E, as S-E (Gavel's -s/-e); default every job")
	f.Uint64Var(&opts.Seed, "seed", 0, "seed (Gavel's --seed in compat mode; --generate's draw)")
	f.StringVar(&opts.Compat, "compat", "", "\"gavel\": reproduce Gavel's simulator")
	f.BoolVar(&opts.JSON, "json", false, "print a JSON object")
	f.StringVar(&opts.Log, "log", "", "write the version-2 decision log (GPUs by type) here (docs/decision-log.md)")
	markOutput(f, "log", fileOutput)
	return cmd
}

// runJobsGavel is `jobs gavel` without cobra.
func runJobsGavel(_ context.Context, opts *jobsGavelOptions) error {
	w := opts.Out
	start := time.Now()
	if (opts.Trace == "") == (opts.Jobs.Generate == "") {
		return errors.New("jobs: --trace or --generate is required, one of them")
	}
	cluster, err := jobs.ParseCluster(opts.Cluster, opts.ServersGPUs)
	if err != nil {
		return fmt.Errorf("jobs: %w", err)
	}
	window, err := parseWindow(opts.Window)
	if err != nil {
		return fmt.Errorf("jobs: --window: %w", err)
	}
	table, err := jobs.LoadThroughputs(opts.Jobs.Throughputs)
	if err != nil {
		return fmt.Errorf("jobs: %w", err)
	}
	var tr *jobs.Trace
	if opts.Jobs.Generate != "" {
		tr, err = generatedTrace(opts.Jobs, opts.Seed, table)
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
		Dropped: res.Dropped, Log: opts.Log, WallSeconds: time.Since(start).Seconds(),
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
func runJobsLogged(tr *jobs.Trace, table *jobs.Throughputs, cfg jobs.Config, opts *jobsGavelOptions) (jobs.Result, error) {
	if opts.Log == "" {
		return jobs.Run(tr, table, cfg)
	}
	f, err := atomicfile.Create(opts.Log, 0o644)
	if err != nil {
		return jobs.Result{}, err
	}
	defer f.Abort()
	meta := map[string]string{"protocol": "gavel-jobs", "trace": tr.Path, "policy": cfg.Policy, "compat": cfg.Compat,
		"cluster": opts.Cluster, "round_s": fmtFloat(opts.Round), "seed": strconv.FormatUint(cfg.Seed, 10), "throughputs": opts.Jobs.Throughputs}
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
