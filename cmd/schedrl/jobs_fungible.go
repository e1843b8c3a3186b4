package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/fungible"
	"github.com/schedrl/schedrl/jobs"
)

// fungibleRules are the --policy names that run a fungible rule in the order of --order; the
// queue policies of jobs run the fixed-demand rule in their own order.
var fungibleRules = []string{"synergy-tune", "gandiva", "integrated-greedy"}

// fungibleOptions are the flags only the fungible world reads.
type fungibleOptions struct {
	Generate string
	Order    string
	Profiles string
	Mapping  string
	Decode   string // a multi-agent policy's decoder (maifsDecodes)
}

// fungibleSummary is the fungible world's --json object.
type fungibleSummary struct {
	Workload    string    `json:"workload"`
	Policy      string    `json:"policy"`
	Rule        string    `json:"rule"`
	Order       string    `json:"order"`
	Cluster     string    `json:"cluster"`
	ServerGPUs  int       `json:"server_gpus"`
	Seed        uint64    `json:"seed"`
	RoundS      float64   `json:"round_s"`
	Jobs        int       `json:"jobs"`
	AvgJCT      float64   `json:"avg_jct_s"`
	P95JCT      float64   `json:"p95_jct_s"`
	Makespan    float64   `json:"makespan_s"`
	Utilization float64   `json:"utilization"`
	Rounds      int       `json:"rounds"`
	WallSeconds float64   `json:"wall_seconds"`
	JCT         []float64 `json:"jct_s"`
	// MAIFS sums a multi-agent policy's decision points (coordination edges, the graph-free
	// decoder's conflicts).
	MAIFS *env.MAIFSStats `json:"maifs,omitempty"`
}

// isFungible tells whether the options ask for the fungible world: a fungible rule, a
// multi-agent checkpoint, or one server size for every type (--servers-gpus 8).
func isFungible(opts *jobsOptions) bool {
	_, err := strconv.Atoi(strings.TrimSpace(opts.ServersGPUs))
	return err == nil || slices.Contains(fungibleRules, opts.Policy) || isLearnedPolicy(opts.Policy)
}

// runJobsFungible runs a Gavel trace or a generated workload on servers with GPUs, CPUs and memory,
// a fungible rule allocating each round (fungible.Run).
func runJobsFungible(opts *jobsOptions, w io.Writer) error {
	start := time.Now()
	fo := opts.Fungible
	switch {
	case opts.Compat != "":
		return fmt.Errorf("jobs: --compat %s reproduces Gavel's GPU-type world; the fungible world (--servers-gpus N, --generate, %s) has no compat mode", opts.Compat, strings.Join(fungibleRules, ", "))
	case opts.Window != "":
		return fmt.Errorf("jobs: --window counts a window in the GPU-type world; the fungible world counts every job")
	case opts.Load != 0:
		return fmt.Errorf("jobs: --load resamples openb pod lists; the fungible world takes --generate or a Gavel trace")
	case (opts.Trace == "") == (fo.Generate == ""):
		return fmt.Errorf("jobs: the fungible world takes --trace or --generate, one of them")
	}
	serverGPUs := fungible.ServerGPUs
	if opts.ServersGPUs != "" {
		n, err := strconv.Atoi(strings.TrimSpace(opts.ServersGPUs))
		if err != nil {
			return fmt.Errorf("jobs: --servers-gpus %q: the fungible world takes one server size in GPUs, e.g. 8", opts.ServersGPUs)
		}
		serverGPUs = n
	}
	cluster, err := fungible.NewMixCluster(opts.Cluster, serverGPUs)
	if err != nil {
		return fmt.Errorf("jobs: --cluster: %w", err)
	}
	policy := cmp.Or(opts.Policy, "fifo")
	ruleName, orderName := "fixed", policy
	learned := isLearnedPolicy(policy)
	if learned {
		// The order policy only sorts the queue a multi-agent policy is handed beside the jobs.
		ruleName, orderName = "fixed", cmp.Or(fo.Order, "fifo")
	} else if fo.Decode != "" {
		return fmt.Errorf("jobs: --maifs-decode sets the decoder of a multi-agent checkpoint (--policy ckpt:DIR or MODEL@ALIAS), not of %s", policy)
	} else if slices.Contains(fungibleRules, policy) {
		ruleName, orderName = policy, cmp.Or(fo.Order, "fifo")
	} else if fo.Order != "" {
		return fmt.Errorf("jobs: --order sets the job order of %s; --policy %s is its own order", strings.Join(fungibleRules, ", "), policy)
	}
	if strings.HasPrefix(strings.ReplaceAll(orderName, "-", "_"), "max_min_fairness") {
		return fmt.Errorf("jobs: %s is Gavel's LP over GPU types: run it without --servers-gpus N (the GPU-type world); the fungible world orders by %s", orderName, "fifo, sjf, srtf or tiresias-las")
	}
	rule, err := fungible.LookupRule(ruleName)
	if err != nil {
		return fmt.Errorf("jobs: %w", err)
	}
	order, err := jobs.NewPolicy(orderName)
	if err != nil {
		return fmt.Errorf("jobs: --order: %w", err)
	}
	table, err := jobs.LoadThroughputs(opts.Throughputs)
	if err != nil {
		return fmt.Errorf("jobs: %w", err)
	}
	m, err := speedModel(opts, table)
	if err != nil {
		return err
	}
	var work []fungible.Job
	workload := opts.Trace
	if fo.Generate != "" {
		if work, workload, err = generateWork(opts, m); err != nil {
			return err
		}
	} else {
		tr, err := jobs.ReadTrace(opts.Trace)
		if err != nil {
			return fmt.Errorf("jobs: %w", err)
		}
		for _, j := range tr.Jobs {
			work = append(work, fungible.Job{ID: j.Index, Type: j.Type.Model, GPUs: j.Type.Scale, Steps: j.Steps, Arrival: j.Arrival})
		}
	}
	run := fungible.RunConfig{Rule: rule, Order: order, Round: opts.Round}
	var mp *env.MAIFSPolicy
	if learned {
		var cleanup func()
		mp, cleanup, err = maifsPolicy(opts.Config, policy, cluster, m, fo.Decode)
		defer cleanup()
		if err != nil {
			return err
		}
		run.Policy, ruleName = mp, "maifs"
	}
	res, err := fungible.Run(cluster, m, work, run)
	if err != nil {
		return fmt.Errorf("jobs: %s: %w", workload, err)
	}
	s := fungibleSummary{Workload: workload, Policy: policy, Rule: ruleName, Order: orderName, Cluster: opts.Cluster, ServerGPUs: serverGPUs,
		Seed: opts.Seed, RoundS: opts.Round, Jobs: len(work), AvgJCT: res.AvgJCT, P95JCT: res.P95JCT, Makespan: res.Makespan,
		Utilization: res.Utilization, Rounds: res.Rounds, WallSeconds: time.Since(start).Seconds(), JCT: res.JCT}
	if mp != nil {
		s.MAIFS = &mp.Stats
	}
	if opts.JSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", " ")
		return enc.Encode(s)
	}
	_, err = fmt.Fprintf(w, "%s (rule %s, order %s) on %s in %d-GPU servers (round %g s): %d jobs, avg JCT %.0f s (%.2f h), p95 JCT %.0f s, makespan %.0f s, utilization %.3f, %d rounds, %.2f s\n",
		s.Policy, s.Rule, s.Order, s.Cluster, s.ServerGPUs, s.RoundS, s.Jobs, s.AvgJCT, s.AvgJCT/3600, s.P95JCT, s.Makespan, s.Utilization, s.Rounds, s.WallSeconds)
	return err
}

// speedModel is Gavel's table with the Synergy profiles of --profiles through --synergy-map.
func speedModel(opts *jobsOptions, table *jobs.Throughputs) (fungible.SpeedModel, error) {
	m, err := fungible.LoadSpeedModel(table, opts.Fungible.Profiles, opts.Fungible.Mapping)
	if err != nil {
		return fungible.SpeedModel{}, fmt.Errorf("jobs: %w", err)
	}
	return m, nil
}

// generateWork draws --generate's workload with --seed over the mapped job types (Gavel's 26) and
// names it.
func generateWork(opts *jobsOptions, m fungible.SpeedModel) ([]fungible.Job, string, error) {
	cfg, err := parseGenerate(opts.Fungible.Generate)
	if err != nil {
		return nil, "", fmt.Errorf("jobs: --generate: %w", err)
	}
	cfg.Seed = opts.Seed
	work, err := fungible.Generate(m.Tput, m.Sens.JobTypes(), cfg)
	if err != nil {
		return nil, "", fmt.Errorf("jobs: --generate: %w", err)
	}
	return work, "generate:" + opts.Fungible.Generate, nil
}

// generatedTrace is a generated workload as the GPU-type world's trace, so its policies (Gavel's
// LPs among them) run the same jobs.
func generatedTrace(opts *jobsOptions, table *jobs.Throughputs) (*jobs.Trace, error) {
	m, err := speedModel(opts, table)
	if err != nil {
		return nil, err
	}
	work, name, err := generateWork(opts, m)
	if err != nil {
		return nil, err
	}
	tr := &jobs.Trace{Path: name, Jobs: make([]jobs.Job, len(work))}
	for i, j := range work {
		tr.Jobs[i] = jobs.Job{Index: i, Line: i + 1, Type: jobs.JobType{Model: j.Type, Scale: j.GPUs}, Steps: j.Steps, Arrival: j.Arrival, PriorityWeight: 1}
	}
	return tr, nil
}

// parseGenerate reads jobs=N,lam=S[,multigpu]: N jobs of Gavel's mix, one every S seconds on
// average (Gavel's lam), multi-GPU counts when multigpu is named.
func parseGenerate(spec string) (fungible.WorkloadConfig, error) {
	var cfg fungible.WorkloadConfig
	var haveJobs, haveLam bool
	for _, f := range strings.Split(spec, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(f), "=")
		var err error
		switch k {
		case "jobs":
			cfg.Jobs, err = strconv.Atoi(v)
			haveJobs = err == nil && cfg.Jobs > 0
		case "lam":
			cfg.Interarrival, err = strconv.ParseFloat(v, 64)
			haveLam = err == nil
		case "multigpu":
			cfg.MultiGPU = v == ""
			if v != "" {
				err = fmt.Errorf("takes no value")
			}
		default:
			return cfg, fmt.Errorf("%q: unknown field %q (want jobs=N,lam=S[,multigpu])", spec, k)
		}
		if err != nil {
			return cfg, fmt.Errorf("%q: field %s: %v", spec, k, err)
		}
	}
	if !haveJobs || !haveLam {
		return cfg, fmt.Errorf("%q: want jobs=N (N > 0) and lam=S, e.g. jobs=1000,lam=1800,multigpu", spec)
	}
	return cfg, nil
}
