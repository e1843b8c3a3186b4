package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/eval"
	"github.com/schedrl/schedrl/fungible"
	"github.com/schedrl/schedrl/internal/atomicfile"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/jobs"
)

// maifsEvalOptions are the flags of `schedrl maifs-eval`.
type maifsEvalOptions struct {
	Out         io.Writer
	Config      config.Config
	Policies    []string
	Baseline    string
	Cluster     string
	ServerGPUs  int
	Generate    string
	Seeds       string
	Traces      []string
	Round       float64
	Throughputs string
	Profiles    string
	Mapping     string
	JSON        string // write the per-seed results here too
}

// maifsEvalRow is one policy on one workload family, over its seeds.
type maifsEvalRow struct {
	Workload  string         `json:"workload"`
	Policy    string         `json:"policy"`
	AvgJCT    []float64      `json:"avg_jct_s"`
	Makespan  []float64      `json:"makespan_s"`
	JCT       eval.Summary   `json:"avg_jct_summary"`
	Span      eval.Summary   `json:"makespan_summary"`
	PairJCT   *eval.Paired   `json:"paired_avg_jct,omitempty"`
	PairSpan  *eval.Paired   `json:"paired_makespan,omitempty"`
	MAIFS     env.MAIFSStats `json:"maifs"`
	SecondsPP float64        `json:"seconds_per_run"`
}

func newMAIFSEvalCmd(runF func(context.Context, *maifsEvalOptions) error) *cobra.Command {
	if runF == nil {
		runF = runMAIFSEval
	}
	opts := &maifsEvalOptions{}
	cmd := &cobra.Command{
		Use:   "maifs-eval",
		Short: "Compare fungible-world policies (baselines, multi-agent checkpoints) paired over seeds: avg JCT and makespan",
		Long: "Runs every --policies entry on the same workloads (--generate with each of --seeds, and each --traces\n" +
			"file once) in the fungible world and prints, per workload, each policy's avg JCT and makespan\n" +
			"(mean ± 95% interval over seeds) and its paired difference from --baseline. Policies: a queue\n" +
			"policy (fifo, sjf, srtf, tiresias-las: fixed demands), RULE/ORDER for a fungible rule (synergy-tune/srtf),\n" +
			"ckpt:DIR or MODEL@ALIAS for a multi-agent checkpoint, with #graph-free for the decoder without\n" +
			"the coordination graph. See docs/maifs.md.",
		Example: "  schedrl maifs-eval --policies synergy-tune/srtf,srtf,ckpt:runs/maifs-bc --baseline synergy-tune/srtf --generate jobs=300,lam=1200,multigpu --seeds 49-58",
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
	config.AddFlags(f, "")
	f.StringSliceVar(&opts.Policies, "policies", []string{"synergy-tune/srtf"}, "policies to compare")
	f.StringVar(&opts.Baseline, "baseline", "synergy-tune/srtf", "the policy the others are paired with (one of --policies)")
	f.StringVar(&opts.Cluster, "cluster", "36:36:36", "GPUs per type, V100:P100:K80")
	f.IntVar(&opts.ServerGPUs, "servers-gpus", fungible.ServerGPUs, "GPUs per server")
	f.StringVar(&opts.Generate, "generate", "jobs=300,lam=1200,multigpu", "generated workload, jobs=N,lam=S[,multigpu] (\"\": none)")
	f.StringVar(&opts.Seeds, "seeds", "49-58", "seeds of the generated workload")
	f.StringArrayVar(&opts.Traces, "trace", nil, "a Gavel trace file, run once (repeatable)")
	f.Float64Var(&opts.Round, "round", 360, "round length in seconds")
	f.StringVar(&opts.Throughputs, "throughputs", filepath.Join("data", "gavel", "simulation_throughputs.json"), "Gavel's throughput table")
	f.StringVar(&opts.Profiles, "profiles", filepath.Join("data", "synergy", "profiles.json"), "Synergy's CPU and memory profiles")
	f.StringVar(&opts.Mapping, "synergy-map", filepath.Join("data", "fungible", "gavel_synergy_models.csv"), "Gavel job type to Synergy model table")
	f.StringVar(&opts.JSON, "json", "", "also write every run's numbers to this JSON file")
	return cmd
}

// fungiblePolicy is one --policies entry, ready to run on a cluster.
type fungiblePolicy struct {
	name  string
	run   fungible.RunConfig
	maifs *env.MAIFSPolicy
}

// resolveFungiblePolicy turns a --policies entry into a run configuration (see maifs-eval's help).
func resolveFungiblePolicy(cfg config.Config, name string, c fungible.Cluster, m fungible.SpeedModel, round float64) (fungiblePolicy, func(), error) {
	p := fungiblePolicy{name: name, run: fungible.RunConfig{Round: round}}
	noop := func() {}
	if isLearnedPolicy(name) {
		ref, decode, _ := strings.Cut(name, "#")
		mp, cleanup, err := maifsPolicy(cfg, ref, c, m, decode)
		if err != nil {
			return p, cleanup, err
		}
		p.maifs, p.run.Policy = mp, mp
		p.run.Order, err = jobs.NewPolicy("fifo")
		return p, cleanup, err
	}
	ruleName, orderName, ok := strings.Cut(name, "/")
	if !ok {
		ruleName, orderName = "fixed", name
	}
	rule, err := fungible.LookupRule(ruleName)
	if err != nil {
		return p, noop, fmt.Errorf("policy %q: %w", name, err)
	}
	if p.run.Order, err = jobs.NewPolicy(orderName); err != nil {
		return p, noop, fmt.Errorf("policy %q: %w", name, err)
	}
	p.run.Rule = rule
	return p, noop, nil
}

// maifsWorkload is one workload the policies all run.
type maifsWorkload struct {
	family string
	work   []fungible.Job
}

func runMAIFSEval(_ context.Context, opts *maifsEvalOptions) error {
	if !slices.Contains(opts.Policies, opts.Baseline) {
		return fmt.Errorf("maifs-eval: --baseline %q is not one of --policies %s", opts.Baseline, strings.Join(opts.Policies, ","))
	}
	cluster, err := fungible.NewMixCluster(opts.Cluster, opts.ServerGPUs)
	if err != nil {
		return fmt.Errorf("maifs-eval: --cluster: %w", err)
	}
	table, err := jobs.LoadThroughputs(opts.Throughputs)
	if err != nil {
		return fmt.Errorf("maifs-eval: %w", err)
	}
	jo := &jobsOptions{Fungible: fungibleOptions{Profiles: opts.Profiles, Mapping: opts.Mapping, Generate: opts.Generate}}
	m, err := speedModel(jo, table)
	if err != nil {
		return err
	}
	loads, err := maifsLoads(opts, jo, m)
	if err != nil {
		return err
	}
	policies := make([]fungiblePolicy, len(opts.Policies))
	for i, name := range opts.Policies {
		p, cleanup, err := resolveFungiblePolicy(opts.Config, name, cluster, m, opts.Round)
		defer cleanup()
		if err != nil {
			return fmt.Errorf("maifs-eval: %w", err)
		}
		policies[i] = p
	}
	rows, byKey, err := maifsRuns(cluster, m, loads, policies)
	if err != nil {
		return err
	}
	for _, row := range rows {
		base := byKey[[2]string{row.Workload, opts.Baseline}]
		row.JCT, row.Span = eval.Summarize(row.AvgJCT), eval.Summarize(row.Makespan)
		row.SecondsPP /= float64(len(row.AvgJCT))
		if row.Policy != opts.Baseline {
			row.PairJCT, row.PairSpan = eval.PairSeeds(opts.Baseline, row.AvgJCT, base.AvgJCT), eval.PairSeeds(opts.Baseline, row.Makespan, base.Makespan)
		}
	}
	if opts.JSON != "" {
		data, err := json.MarshalIndent(rows, "", " ")
		if err != nil {
			return err
		}
		if err := atomicfile.WriteFile(opts.JSON, append(data, '\n'), 0o644); err != nil {
			return fmt.Errorf("maifs-eval: --json: %w", err)
		}
	}
	return writeMAIFSTable(opts.Out, rows, opts.Baseline)
}

// maifsLoads is every workload: --generate's jobs once per seed, then each --trace file.
func maifsLoads(opts *maifsEvalOptions, jo *jobsOptions, m fungible.SpeedModel) ([]maifsWorkload, error) {
	var loads []maifsWorkload
	if opts.Generate != "" {
		seeds, err := config.ParseSeeds(opts.Seeds)
		if err != nil {
			return nil, fmt.Errorf("maifs-eval: --seeds: %w", err)
		}
		for _, seed := range seeds {
			jo.Seed = seed
			work, _, err := generateWork(jo, m)
			if err != nil {
				return nil, fmt.Errorf("maifs-eval: %w", err)
			}
			loads = append(loads, maifsWorkload{"generate:" + opts.Generate, work})
		}
	}
	for _, path := range opts.Traces {
		tr, err := jobs.ReadTrace(path)
		if err != nil {
			return nil, fmt.Errorf("maifs-eval: %w", err)
		}
		loads = append(loads, maifsWorkload{filepath.Base(path), fungible.FromTrace(tr)})
	}
	if len(loads) == 0 {
		return nil, fmt.Errorf("maifs-eval: no workload (--generate or --trace)")
	}
	return loads, nil
}

// maifsRuns runs every policy on every workload: one row per (workload family, policy), its
// runs in workload order, so rows pair seed by seed.
func maifsRuns(cluster fungible.Cluster, m fungible.SpeedModel, loads []maifsWorkload, policies []fungiblePolicy) ([]*maifsEvalRow, map[[2]string]*maifsEvalRow, error) {
	var rows []*maifsEvalRow
	byKey := map[[2]string]*maifsEvalRow{}
	for _, w := range loads {
		for _, p := range policies {
			row := byKey[[2]string{w.family, p.name}]
			if row == nil {
				row = &maifsEvalRow{Workload: w.family, Policy: p.name}
				byKey[[2]string{w.family, p.name}] = row
				rows = append(rows, row)
			}
			start := time.Now()
			if p.maifs != nil {
				p.maifs.Stats = env.MAIFSStats{}
			}
			res, err := fungible.Run(cluster, m, w.work, p.run)
			if err != nil {
				return nil, nil, fmt.Errorf("maifs-eval: %s on %s: %w", p.name, w.family, err)
			}
			row.AvgJCT, row.Makespan = append(row.AvgJCT, res.AvgJCT), append(row.Makespan, res.Makespan)
			row.SecondsPP += time.Since(start).Seconds()
			if p.maifs != nil {
				s := p.maifs.Stats
				row.MAIFS.Decisions += s.Decisions
				row.MAIFS.Agents += s.Agents
				row.MAIFS.Edges += s.Edges
				row.MAIFS.Conflicts += s.Conflicts
			}
		}
	}
	return rows, byKey, nil
}

// writeMAIFSTable prints the comparison as a Markdown table: hours, paired differences in %
// of the baseline's mean.
func writeMAIFSTable(w io.Writer, rows []*maifsEvalRow, baseline string) error {
	fmt.Fprintf(w, "| workload | policy | seeds | avg JCT (h) | makespan (h) | Δ avg JCT vs %s | Δ makespan | conflicts/decision (graph-free) | s/run |\n|---|---|---|---|---|---|---|---|---|\n", baseline)
	h := func(s eval.Summary) string { return fmt.Sprintf("%.2f ± %.2f", s.Mean/3600, s.HalfWidth/3600) }
	pct := func(p *eval.Paired, base float64) string {
		if p == nil {
			return "—"
		}
		return fmt.Sprintf("%+.1f%% [%+.1f, %+.1f] %s", 100*p.Diff.Mean/base, 100*p.Diff.Low/base, 100*p.Diff.High/base, p.Verdict())
	}
	var base = map[string]*maifsEvalRow{}
	for _, r := range rows {
		if r.Policy == baseline {
			base[r.Workload] = r
		}
	}
	for _, r := range rows {
		b := base[r.Workload]
		conf := "—"
		if r.MAIFS.Decisions > 0 {
			conf = fmt.Sprintf("%.2f", float64(r.MAIFS.Conflicts)/float64(r.MAIFS.Decisions))
		}
		if _, err := fmt.Fprintf(w, "| %s | %s | %d | %s | %s | %s | %s | %s | %.1f |\n", r.Workload, r.Policy, r.JCT.N, h(r.JCT), h(r.Span),
			pct(r.PairJCT, b.JCT.Mean), pct(r.PairSpan, b.Span.Mean), conf, r.SecondsPP); err != nil {
			return err
		}
	}
	return nil
}
