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
var fungibleRules = []string{"synergy-tune", "tune-scale", "gandiva", "integrated-greedy"}

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

// isFungible tells whether the options ask for the fungible world: a fungible rule,
// max_min_fairness_packed (Gavel's LP over pairs exists only there), a multi-agent checkpoint,
// or one server size for every type (--servers-gpus 8).
func isFungible(opts *jobsOptions) bool {
	_, err := strconv.Atoi(strings.TrimSpace(opts.ServersGPUs))
	return err == nil || slices.Contains(fungibleRules, opts.Policy) || isLearnedPolicy(opts.Policy) ||
		strings.ReplaceAll(opts.Policy, "-", "_") == "max_min_fairness_packed"
}

// runJobsFungible runs a Gavel trace or a generated workload on servers with GPUs, CPUs and memory,
// a fungible rule, one of Gavel's LPs or a multi-agent checkpoint allocating each round
// (fungible.Run).
func runJobsFungible(opts *jobsOptions, w io.Writer) error {
	start := time.Now()
	if err := refuseInFungible(opts); err != nil {
		return err
	}
	cluster, serverGPUs, err := fungibleCluster(opts)
	if err != nil {
		return err
	}
	policy := cmp.Or(opts.Policy, "fifo")
	cfg, ruleName, orderName, err := fungibleDecider(opts, policy)
	if err != nil {
		return err
	}
	table, err := jobs.LoadThroughputs(opts.Throughputs)
	if err != nil {
		return fmt.Errorf("jobs: %w", err)
	}
	m, err := speedModel(opts, table)
	if err != nil {
		return err
	}
	work, workload, err := fungibleWork(opts, m)
	if err != nil {
		return err
	}
	cfg.Round = opts.Round
	var mp *env.MAIFSPolicy
	if isLearnedPolicy(policy) {
		var cleanup func()
		mp, cleanup, err = maifsPolicy(opts.Config, policy, cluster, m, opts.Fungible.Decode)
		defer cleanup()
		if err != nil {
			return err
		}
		cfg.Policy, ruleName = mp, "maifs"
	}
	var rec *fungible.RoundLog
	if opts.Openb.Log != "" {
		rec = fungible.Record(&cfg)
	}
	res, err := fungible.Run(cluster, m, work, cfg)
	if err != nil {
		return fmt.Errorf("jobs: %s: %w", workload, err)
	}
	if rec != nil {
		h := fungible.LogHeader{Cluster: opts.Cluster, ServerGPUs: serverGPUs, Servers: fungible.LogServers(cluster), RoundS: opts.Round,
			Rule: ruleName, Order: orderName, Workload: workload, Seed: opts.Seed, Jobs: fungible.LogJobs(work)}
		if ruleName == "gavel-lp" { // the LP orders nothing: it is the deciding policy
			h.Rule, h.Order = orderName, ""
		}
		if err := fungible.WriteLogFile(opts.Openb.Log, h, fungibleFiles(opts), rec.Rounds, res); err != nil {
			return fmt.Errorf("jobs: --log: %w", err)
		}
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

// fungibleFiles are the data files a fungible run reads, for its log's header.
func fungibleFiles(opts *jobsOptions) map[string]string {
	return map[string]string{"throughputs": opts.Throughputs, "profiles": opts.Fungible.Profiles, "mapping": opts.Fungible.Mapping}
}

// refuseInFungible names the flags of the GPU-type and openb worlds the fungible world has no use for.
func refuseInFungible(opts *jobsOptions) error {
	switch {
	case opts.Compat != "":
		return fmt.Errorf("jobs: --compat %s reproduces Gavel's GPU-type world; the fungible world (--servers-gpus N, --generate, %s) has no compat mode", opts.Compat, strings.Join(fungibleRules, ", "))
	case opts.Window != "":
		return fmt.Errorf("jobs: --window counts a window in the GPU-type world; the fungible world counts every job")
	case opts.Load != 0:
		return fmt.Errorf("jobs: --load resamples openb pod lists; the fungible world takes --generate or a Gavel trace")
	case (opts.Trace == "") == (opts.Fungible.Generate == ""):
		return fmt.Errorf("jobs: the fungible world takes --trace or --generate, one of them")
	}
	return nil
}

// fungibleCluster is --cluster in servers of --servers-gpus GPUs (default fungible.ServerGPUs).
func fungibleCluster(opts *jobsOptions) (fungible.Cluster, int, error) {
	serverGPUs := fungible.ServerGPUs
	if opts.ServersGPUs != "" {
		n, err := strconv.Atoi(strings.TrimSpace(opts.ServersGPUs))
		if err != nil {
			return fungible.Cluster{}, 0, fmt.Errorf("jobs: --servers-gpus %q: the fungible world takes one server size in GPUs, e.g. 8", opts.ServersGPUs)
		}
		serverGPUs = n
	}
	cluster, err := fungible.NewMixCluster(opts.Cluster, serverGPUs)
	if err != nil {
		return fungible.Cluster{}, 0, fmt.Errorf("jobs: --cluster: %w", err)
	}
	return cluster, serverGPUs, nil
}

// fungibleDecider sets the round's decision of --policy: one of Gavel's LPs, or a rule and its
// job order (a queue policy is the fixed rule in its own order; a multi-agent checkpoint gets the
// fixed rule's up-front check and --order, default fifo, sorts the queue it is handed).
func fungibleDecider(opts *jobsOptions, policy string) (cfg fungible.RunConfig, ruleName, orderName string, err error) {
	fo := opts.Fungible
	learned := isLearnedPolicy(policy)
	ruleName, orderName = "fixed", policy
	switch {
	case fo.Decode != "" && !learned:
		return cfg, "", "", fmt.Errorf("jobs: --maifs-decode sets the decoder of a multi-agent checkpoint (--policy ckpt:DIR or MODEL@ALIAS), not of %s", policy)
	case learned:
		orderName = cmp.Or(fo.Order, "fifo")
	case slices.Contains(fungibleRules, policy):
		ruleName, orderName = policy, cmp.Or(fo.Order, "fifo")
	case fo.Order != "":
		return cfg, "", "", fmt.Errorf("jobs: --order sets the job order of %s; --policy %s is its own order", strings.Join(fungibleRules, ", "), policy)
	}
	if lp := strings.ReplaceAll(policy, "-", "_"); slices.Contains(fungible.RoundPolicyNames(), lp) {
		// Gavel's LPs (their own priorities per (job or pair, GPU type), fixed demands) and the
		// Sia-style optimiser: round policies of their own.
		cfg.Policy, err = fungible.NewRoundPolicy(lp)
		if err != nil {
			return cfg, "", "", fmt.Errorf("jobs: %w", err)
		}
		if !strings.HasPrefix(lp, "max_min_fairness") {
			return cfg, lp, lp, nil
		}
		return cfg, "gavel-lp", lp, nil
	}
	if strings.HasPrefix(strings.ReplaceAll(orderName, "-", "_"), "max_min_fairness") {
		return cfg, "", "", fmt.Errorf("jobs: --order %s: Gavel's LPs are policies of their own (--policy %s); rules take fifo, sjf, srtf or tiresias-las", orderName, orderName)
	}
	if cfg.Rule, err = fungible.LookupRule(ruleName); err != nil {
		return cfg, "", "", fmt.Errorf("jobs: %w", err)
	}
	if cfg.Order, err = jobs.NewPolicy(orderName); err != nil {
		return cfg, "", "", fmt.Errorf("jobs: --order: %w", err)
	}
	return cfg, ruleName, orderName, nil
}

// fungibleWork is the workload: --generate's jobs, or the Gavel trace of --trace.
func fungibleWork(opts *jobsOptions, m fungible.SpeedModel) ([]fungible.Job, string, error) {
	if opts.Fungible.Generate != "" {
		return generateWork(opts, m)
	}
	tr, err := jobs.ReadTrace(opts.Trace)
	if err != nil {
		return nil, "", fmt.Errorf("jobs: %w", err)
	}
	return fungible.FromTrace(tr), opts.Trace, nil
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
	cfg, err := fungible.ParseWorkloadSpec(opts.Fungible.Generate)
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

// generatedTrace is a generated workload as the GPU-type world's trace.
func generatedTrace(opts *jobsOptions, table *jobs.Throughputs) (*jobs.Trace, error) {
	m, err := speedModel(opts, table)
	if err != nil {
		return nil, err
	}
	work, name, err := generateWork(opts, m)
	if err != nil {
		return nil, err
	}
	return fungible.AsTrace(work, name), nil
}
