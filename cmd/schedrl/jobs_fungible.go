package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/fungible"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/jobs"
)

// fungibleRules are the --policy names that run a fungible rule in the order of --order; the
// queue policies of jobs run the fixed-demand rule in their own order.
var fungibleRules = []string{"synergy-tune", "tune-scale", "gandiva", "integrated-greedy"}

// jobsFungibleOptions is `schedrl jobs fungible`: DL jobs as whole allocations on servers
// with GPUs, CPUs and memory.
type jobsFungibleOptions struct {
	Out   io.Writer
	Jobs  jobSource
	Trace string // a Gavel trace, or "" with Jobs.Generate
	// Cluster is GPUs per type (V100:P100:K80) in servers of ServerGPUs GPUs.
	Cluster    string
	ServerGPUs int
	// Policy is a fungible rule, a queue policy (the fixed rule in its order), one of Gavel's
	// LPs, or a multi-agent checkpoint; Order is a rule's job order, Decode a checkpoint's decoder.
	Policy, Order, Decode string
	Round                 float64
	Seed                  uint64
	JSON                  bool
	Log                   string        // the fungible decision log to write ("" none)
	Config                config.Config // device and registry, for a multi-agent checkpoint policy
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

func newJobsFungibleCmd(runF func(context.Context, *jobsFungibleOptions) error) *cobra.Command {
	if runF == nil {
		runF = runJobsFungible
	}
	opts := &jobsFungibleOptions{}
	cmd := &cobra.Command{
		Use:   "fungible (--trace FILE | --generate SPEC)",
		Short: "DL jobs as whole allocations on servers with GPUs, CPUs and memory: Synergy's rules, Gavel's LPs, MAIFS checkpoints",
		Long: "Runs a Gavel job trace, or Gavel's generated job mix, on a V100:P100:K80 cluster in servers of --servers-gpus GPUs\n" +
			"(3 CPUs and 62.5 GB per GPU) in rounds of --round seconds: each round --policy gives jobs whole allocations\n" +
			"(GPU type and count, CPUs and memory, a co-located partner), checked against capacity, and the speed model\n" +
			"(Gavel's throughputs x Synergy's CPU/memory sensitivity) sets their progress. Policies: the rules " + strings.Join(fungibleRules, ", ") + "\n" +
			"in the job order of --order; the queue policies (fixed demands in their own order); Gavel's LPs\n" +
			"max_min_fairness, max_min_fairness_perf and max_min_fairness_packed; a multi-agent (MAIFS) checkpoint,\n" +
			"ckpt:DIR or MODEL@ALIAS (schedrl maifs-bc). See docs/fungible.md and docs/maifs.md.",
		Example: "  schedrl jobs fungible --policy synergy-tune --generate jobs=1000,lam=1200,multigpu --seed 0\n" +
			"  schedrl jobs fungible --policy maifs@champion --generate jobs=300,lam=1200,multigpu --seed 49 --json",
		Args: cobra.NoArgs,
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
	f.StringVar(&opts.Trace, "trace", "", "Gavel job trace (.trace)")
	addJobSourceFlags(f, &opts.Jobs, "")
	f.StringVar(&opts.Cluster, "cluster", "36:36:36", "GPUs per type, V100:P100:K80")
	intFlag(f, &opts.ServerGPUs, "servers-gpus", fungible.ServerGPUs, 1, "GPUs per server (each with 3 CPUs and 62.5 GB per GPU)")
	f.StringVar(&opts.Policy, "policy", "fifo", "allocation policy: "+strings.Join(fungibleRules, ", ")+"; queue policies "+strings.Join(jobs.Policies(), ", ")+
		" (fixed demands); max_min_fairness_packed; a multi-agent checkpoint, ckpt:DIR or MODEL@ALIAS")
	f.StringVar(&opts.Order, "order", "", "job order of "+strings.Join(fungibleRules, ", ")+" and of a checkpoint's queue: fifo, sjf, srtf or tiresias-las (default fifo)")
	f.StringVar(&opts.Decode, "maifs-decode", "", "multi-agent checkpoint policy: decoder, "+strings.Join(maifsDecodes, " or ")+" (the ablation without the coordination graph; default ordered)")
	f.Float64Var(&opts.Round, "round", 360, "round length in seconds")
	f.Uint64Var(&opts.Seed, "seed", 0, "seed of --generate's draw")
	f.BoolVar(&opts.JSON, "json", false, "print a JSON object")
	f.StringVar(&opts.Log, "log", "", "write the fungible world's decision log of whole allocations here (docs/decision-log.md)")
	markOutput(f, "log", fileOutput)
	config.AddFlags(f, "")
	return cmd
}

// isFungible tells whether the options ask for the fungible world: a fungible rule,
// max_min_fairness_packed (Gavel's LP over pairs exists only there), a multi-agent checkpoint,
// or one server size for every type (--servers-gpus 8).
func isFungible(opts *jobsOptions) bool {
	_, err := strconv.Atoi(strings.TrimSpace(opts.ServersGPUs))
	return err == nil || slices.Contains(fungibleRules, opts.Policy) || isLearnedPolicy(opts.Policy) ||
		strings.ReplaceAll(opts.Policy, "-", "_") == "max_min_fairness_packed"
}

// runJobsFungible is `jobs fungible` without cobra: a Gavel trace or a generated workload on
// servers with GPUs, CPUs and memory, a fungible rule, one of Gavel's LPs or a multi-agent
// checkpoint allocating each round (fungible.Run).
func runJobsFungible(_ context.Context, opts *jobsFungibleOptions) error {
	w := opts.Out
	start := time.Now()
	if (opts.Trace == "") == (opts.Jobs.Generate == "") {
		return fmt.Errorf("jobs: the fungible world takes --trace or --generate, one of them")
	}
	world, err := fungible.LoadWorld(opts.Jobs.world(opts.Cluster, opts.ServerGPUs), "--")
	if err != nil {
		return fmt.Errorf("jobs: %w", err)
	}
	cluster, m := world.Cluster, world.Model
	policy := cmp.Or(opts.Policy, "fifo")
	cfg, ruleName, orderName, err := fungibleDecider(opts, policy)
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
		mp, cleanup, err = maifsPolicy(opts.Config, policy, cluster, m, opts.Decode)
		defer cleanup()
		if err != nil {
			return err
		}
		cfg.Policy, ruleName = mp, maifsRule
	}
	var rec *fungible.RoundLog
	if opts.Log != "" {
		rec = fungible.Record(&cfg)
	}
	res, err := fungible.Run(cluster, m, work, cfg)
	if err != nil {
		return fmt.Errorf("jobs: %s: %w", workload, err)
	}
	if rec != nil {
		h := fungible.LogHeader{Cluster: opts.Cluster, ServerGPUs: opts.ServerGPUs, Servers: fungible.LogServers(cluster), RoundS: opts.Round,
			Rule: ruleName, Order: orderName, Workload: workload, Seed: opts.Seed, Jobs: fungible.LogJobs(work)}
		if ruleName == "gavel-lp" { // the LP orders nothing: it is the deciding policy
			h.Rule, h.Order = orderName, ""
		}
		if err := fungible.WriteLogFile(opts.Log, h, fungibleFiles(opts.Jobs), rec.Rounds, res); err != nil {
			return fmt.Errorf("jobs: --log: %w", err)
		}
	}
	s := fungibleSummary{Workload: workload, Policy: policy, Rule: ruleName, Order: orderName, Cluster: opts.Cluster, ServerGPUs: opts.ServerGPUs,
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
func fungibleFiles(s jobSource) map[string]string {
	return map[string]string{"throughputs": s.Throughputs, "profiles": s.Profiles, "mapping": s.Mapping}
}

// fungibleDecider sets the round's decision of --policy: one of Gavel's LPs, or a rule and its
// job order (a queue policy is the fixed rule in its own order; a multi-agent checkpoint gets the
// fixed rule's up-front check and --order, default fifo, sorts the queue it is handed).
func fungibleDecider(fo *jobsFungibleOptions, policy string) (cfg fungible.RunConfig, ruleName, orderName string, err error) {
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
func fungibleWork(opts *jobsFungibleOptions, m fungible.SpeedModel) ([]fungible.Job, string, error) {
	if opts.Jobs.Generate != "" {
		return generateWork(opts.Jobs.Generate, opts.Seed, m)
	}
	tr, err := jobs.ReadTrace(opts.Trace)
	if err != nil {
		return nil, "", fmt.Errorf("jobs: %w", err)
	}
	return fungible.FromTrace(tr), opts.Trace, nil
}

// world is the fungible world of the source's tables on cluster, for fungible.LoadWorld.
func (s jobSource) world(cluster string, serverGPUs int) fungible.WorldSpec {
	return fungible.WorldSpec{Cluster: cluster, ServerGPUs: serverGPUs, Throughputs: s.Throughputs,
		Profiles: s.Profiles, Mapping: s.Mapping, MappingKey: "synergy-map"}
}

// model is the speed model of the source's tables over Gavel's table, already loaded.
func (s jobSource) model(table *jobs.Throughputs) (fungible.SpeedModel, error) {
	m, err := fungible.ModelOf(table, s.world("", 0), "--")
	if err != nil {
		return fungible.SpeedModel{}, fmt.Errorf("jobs: %w", err)
	}
	return m, nil
}

// generateWork draws the workload of spec (--generate) with seed over the mapped job types
// (Gavel's 26) and names it.
func generateWork(spec string, seed uint64, m fungible.SpeedModel) ([]fungible.Job, string, error) {
	cfg, err := fungible.ParseWorkloadSpec(spec)
	if err != nil {
		return nil, "", fmt.Errorf("jobs: --generate: %w", err)
	}
	cfg.Seed = seed
	work, err := fungible.Generate(m.Tput, m.Sens.JobTypes(), cfg)
	if err != nil {
		return nil, "", fmt.Errorf("jobs: --generate: %w", err)
	}
	return work, "generate:" + spec, nil
}

// generatedTrace is a generated workload as the GPU-type world's trace.
func generatedTrace(s jobSource, seed uint64, table *jobs.Throughputs) (*jobs.Trace, error) {
	m, err := s.model(table)
	if err != nil {
		return nil, err
	}
	work, name, err := generateWork(s.Generate, seed, m)
	if err != nil {
		return nil, err
	}
	return fungible.AsTrace(work, name), nil
}
