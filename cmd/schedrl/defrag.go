package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/schedrl/schedrl/defrag"
	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/internal/atomicfile"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/internal/manifestkind"
	"github.com/schedrl/schedrl/policy"
	"github.com/schedrl/schedrl/sim"
)

// defragFlags are the flags shared by the defrag subcommands; set ones override the config.
type defragFlags struct {
	nodes, pods, placer string
	seed                uint64
	departures, budget  float64
	samples, maxPending int
	placerFlag          string // "policy" for snapshot, "placer" where --policy is the planning method
}

func (d *defragFlags) add(f *pflag.FlagSet, placerFlag string) {
	d.placerFlag = placerFlag
	config.AddFlags(f, "")
	f.StringVar(&d.nodes, "nodes", "", "openb node list CSV (default: the sim section's)")
	f.StringVar(&d.pods, "pods", "", "openb pod list CSV (default: the sim section's)")
	f.StringVar(&d.placer, placerFlag, "", "placement policy of the arrivals and of pending tasks (default fgd): "+strings.Join(policy.Placers(), ", "))
	f.Uint64Var(&d.seed, "seed", 0, "state seed (workload, tie-breaks, departures)")
	f.Float64Var(&d.departures, "departures", 0, "share of running tasks that depart after the arrivals (default 0.1)")
	intFlag(f, &d.maxPending, "max-pending", 0, 0, "pending queue length cap (default 200)")
	f.Float64Var(&d.budget, "budget", 0, "migration budget: a count, or a fraction of running tasks when < 1 (default 50)")
	intFlag(f, &d.samples, "samples", 0, 1, "sample K plans and keep the best (default 1)")
}

// load reads the config and applies the set flags.
func (d *defragFlags) load(cmd *cobra.Command) (config.Config, error) {
	cfg, err := loadConfig(cmd)
	if err != nil {
		return cfg, err
	}
	f := cmd.Flags()
	for name, apply := range map[string]func(){
		"nodes": func() { cfg.Sim.Nodes = d.nodes }, "pods": func() { cfg.Sim.Pods = d.pods },
		d.placerFlag: func() { cfg.Defrag.Placer = d.placer }, "seed": func() { cfg.Sim.Seed = d.seed },
		"departures": func() { cfg.Defrag.Departures = d.departures }, "budget": func() { cfg.Defrag.Budget = d.budget },
		"samples": func() { cfg.Defrag.Samples = d.samples }, "max-pending": func() { cfg.Defrag.MaxPending = d.maxPending },
	} {
		if f.Lookup(name) != nil && f.Changed(name) {
			apply()
		}
	}
	if err := cfg.Sim.Validate(); err != nil {
		return cfg, fmt.Errorf("defrag: sim: %w", err)
	}
	if err := cfg.Defrag.Validate(); err != nil {
		return cfg, fmt.Errorf("defrag: %w", err)
	}
	return cfg, nil
}

func stateSpec(cfg config.Config) defrag.StateSpec {
	return defrag.StateSpec{Nodes: cfg.Sim.Nodes, Pods: cfg.Sim.Pods, Policy: cfg.Defrag.Placer, Seed: cfg.Sim.Seed,
		Tune: cfg.Sim.Tune, Coverage: cfg.Sim.Coverage, Departures: cfg.Defrag.Departures, MaxPending: cfg.Defrag.MaxPending}
}

func defragOptions(cfg config.Config) env.DefragOptions {
	return env.DefragOptions{RewardFragment: cfg.Defrag.RewardFragment, RewardPending: cfg.Defrag.RewardPending,
		MigrationCost: cfg.Defrag.MigrationCost}
}

func newDefragCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "defrag",
		Short: "Defragmentation: fragmented starting states, migration plans, method comparison",
	}
	cmd.AddCommand(newDefragSnapshotCmd(nil), newDefragPlanCmd(nil), newDefragCompareCmd(nil), newDefragDemosCmd(nil), newDefragOnlineCmd(runDefragOnline))
	return cmd
}

// defragIO is what every defrag subcommand gets: its output and the config with the shared
// defrag flags applied.
type defragIO struct {
	Out    io.Writer
	Config config.Config
}

// defragRunE loads the config through flags, fills rio and calls runF.
func defragRunE[O any](opts *O, rio *defragIO, flags *defragFlags, runF func(context.Context, *O) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, _ []string) error {
		cfg, err := flags.load(cmd)
		if err != nil {
			return err
		}
		rio.Out, rio.Config = cmd.OutOrStdout(), cfg
		return runF(cmd.Context(), opts)
	}
}

type defragSnapshotOptions struct {
	defragIO
	Snapshot string // --out
}

func newDefragSnapshotCmd(runF func(context.Context, *defragSnapshotOptions) error) *cobra.Command {
	if runF == nil {
		runF = runDefragSnapshot
	}
	opts := &defragSnapshotOptions{}
	var flags defragFlags
	cmd := &cobra.Command{
		Use:   "snapshot",
		Short: "Make a fragmented starting state (arrivals, random departures, pending queue) as a snapshot JSON",
		Example: "  schedrl defrag snapshot --nodes data/openb/openb_node_list_gpu_node.csv --pods data/openb/openb_pod_list_default.csv \\\n" +
			"    --policy fgd --seed 49 --departures 0.1 --out snap.json",
		Args: cobra.NoArgs,
		RunE: defragRunE(opts, &opts.defragIO, &flags, runF),
	}
	flags.add(cmd.Flags(), "policy")
	cmd.Flags().StringVar(&opts.Snapshot, "out", "", "snapshot JSON to write")
	markOutput(cmd.Flags(), "out", fileOutput)
	return cmd
}

func runDefragSnapshot(_ context.Context, opts *defragSnapshotOptions) error {
	if opts.Snapshot == "" {
		return fmt.Errorf("defrag snapshot: --out is required")
	}
	s, err := defrag.MakeState(stateSpec(opts.Config))
	if err != nil {
		return err
	}
	if err := sim.WriteSnapshotFile(opts.Snapshot, s); err != nil {
		return err
	}
	fmt.Fprintf(opts.Out, "%s: %d nodes, %d running tasks, %d pending\n", opts.Snapshot, len(s.Nodes), len(s.Running), len(s.Pending))
	return nil
}

type defragPlanOptions struct {
	defragIO
	Snapshot, Method, Model, Plan, Log string
	MethodSet                          bool // --policy given
}

func newDefragPlanCmd(runF func(context.Context, *defragPlanOptions) error) *cobra.Command {
	if runF == nil {
		runF = runDefragPlan
	}
	opts := &defragPlanOptions{}
	var flags defragFlags
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Plan migrations for a snapshot with a heuristic (--policy) or a checkpoint (--model) and write them with predicted outcomes",
		Long: "Plans at most --budget migrations for the snapshot with a planning method (" + strings.Join(defrag.Methods(), ", ") + "),\n" +
			"replays the plan in the simulator (every step is checked) and writes plan.json: the ordered migrations\n" +
			"with the fragment ratio and pending-task placement predicted after each. --samples K keeps the best\n" +
			"of K sampled plans by reward (a --model's sample 0 is its greedy decoding, the others are drawn from\n" +
			"its masked softmax). Pending tasks are placed with the defrag section's placer (fgd).",
		Args: cobra.NoArgs,
	}
	cmd.RunE = defragRunE(opts, &opts.defragIO, &flags, func(ctx context.Context, o *defragPlanOptions) error {
		o.MethodSet = cmd.Flags().Changed("policy")
		return runF(ctx, o)
	})
	flags.add(cmd.Flags(), "placer")
	cmd.Flags().StringVar(&opts.Snapshot, "snapshot", "", "snapshot JSON (from defrag snapshot)")
	cmd.Flags().StringVar(&opts.Method, "policy", "greedy", "planning method: "+strings.Join(defrag.Methods(), ", "))
	cmd.Flags().StringVar(&opts.Model, "model", "", "plan with a trained defrag checkpoint (pretrain/finetune output on a defrag dataset) instead of --policy")
	cmd.Flags().StringVar(&opts.Plan, "out", "", "plan JSON to write")
	cmd.Flags().StringVar(&opts.Log, "log", "", "also write the plan as a decision log (start as arrive/bind, then migrate events)")
	markOutput(cmd.Flags(), "out", fileOutput)
	markOutput(cmd.Flags(), "log", fileOutput)
	return cmd
}

func runDefragPlan(_ context.Context, opts *defragPlanOptions) error {
	cfg := opts.Config
	switch {
	case opts.Snapshot == "" || opts.Plan == "":
		return fmt.Errorf("defrag plan: --snapshot and --out are required")
	case opts.Model != "" && opts.MethodSet:
		return fmt.Errorf("defrag plan: give --model or --policy, not both")
	}
	var planner defrag.Planner
	var err error
	if opts.Model != "" {
		planner, err = modelPlanner(cfg, opts.Model)
	} else {
		planner, err = defrag.NewPlanner(opts.Method)
	}
	if err != nil {
		return fmt.Errorf("defrag plan: %w", err)
	}
	s, _, _, err := sim.ReadSnapshotFile(opts.Snapshot)
	if err != nil {
		return err
	}
	pr, err := defrag.NewProblem(s, cfg.Defrag.Placer, defragOptions(cfg))
	if err != nil {
		return fmt.Errorf("%s: %w", opts.Snapshot, err)
	}
	pr.Options.Budget = defrag.BudgetFor(cfg.Defrag.Budget, pr.Cluster.Running())
	p, err := defrag.Best(pr, planner, cfg.Defrag.Samples, cfg.Sim.Seed)
	if err != nil {
		return err
	}
	if opts.Log != "" {
		meta := map[string]string{"protocol": "defrag-plan", "policy": p.Method, "snapshot": opts.Snapshot}
		if err := defrag.WriteLog(opts.Log, pr, p, meta); err != nil {
			return err
		}
	}
	if err := defrag.WritePlan(opts.Plan, p); err != nil {
		return err
	}
	fmt.Fprintf(opts.Out, "%s: %d migrations (budget %d); fragment %.1f%% -> %.1f%% of idle; pending placeable %d -> %d tasks (%.1f -> %.1f GPUs); %.3f s\n",
		p.Method, len(p.Steps), p.Budget, p.Before.FragRatioPct, p.After.FragRatioPct, p.Before.PendingPlaced, p.After.PendingPlaced,
		p.Before.PendingGPUs, p.After.PendingGPUs, p.WallSeconds)
	return nil
}

type defragCompareOptions struct {
	defragIO
	Seeds, Methods, Model string
	JSON                  bool
}

func newDefragCompareCmd(runF func(context.Context, *defragCompareOptions) error) *cobra.Command {
	if runF == nil {
		runF = runDefragCompare
	}
	opts := &defragCompareOptions{}
	var flags defragFlags
	cmd := &cobra.Command{
		Use:   "compare",
		Short: "Make the state of each seed and plan it with every method at the same budget; print before/after",
		Args:  cobra.NoArgs,
		RunE:  defragRunE(opts, &opts.defragIO, &flags, runF),
	}
	flags.add(cmd.Flags(), "placer")
	cmd.Flags().StringVar(&opts.Seeds, "seeds", "49-53", "held-out state seeds, e.g. 49-53")
	cmd.Flags().StringVar(&opts.Methods, "methods", strings.Join(defrag.Methods(), ","), "planning methods to compare")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the rows as JSON")
	cmd.Flags().StringVar(&opts.Model, "model", "", "also plan with this defrag checkpoint (method \"model\")")
	return cmd
}

func runDefragCompare(_ context.Context, opts *defragCompareOptions) error {
	cfg := opts.Config
	seedList, err := config.ParseSeeds(opts.Seeds)
	if err != nil {
		return fmt.Errorf("defrag compare: --seeds: %w", err)
	}
	planners, err := defrag.NewPlanners(splitList(strings.Split(opts.Methods, ",")))
	if err != nil {
		return fmt.Errorf("defrag compare: %w", err)
	}
	if opts.Model != "" {
		p, err := modelPlanner(cfg, opts.Model)
		if err != nil {
			return fmt.Errorf("defrag compare: %w", err)
		}
		planners = append(planners, p)
	}
	rows, err := defrag.Compare(stateSpec(cfg), seedList, planners, cfg.Defrag.Placer,
		defragOptions(cfg), cfg.Defrag.Budget, cfg.Defrag.Samples)
	if err != nil {
		return err
	}
	if opts.JSON {
		return json.NewEncoder(opts.Out).Encode(rows)
	}
	tw := tabwriter.NewWriter(opts.Out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "seed\tmethod\tfrag_ratio_before\tfrag_ratio_after\tpending_tasks_placed\tpending_gpus_placed\tmigrations\tmoved_gpus\treward\tseconds")
	for _, r := range rows {
		fmt.Fprintf(tw, "%d\t%s\t%.2f\t%.2f\t%d\t%.1f\t%d\t%.1f\t%.2f\t%.3f\n", r.Seed, r.Method, r.Before.FragRatioPct, r.After.FragRatioPct,
			r.After.PendingPlaced-r.Before.PendingPlaced, r.After.PendingGPUs-r.Before.PendingGPUs, r.After.MigrationsUsed, r.After.MovedGPUs, r.After.Reward, r.Wall)
	}
	return tw.Flush()
}

type defragDemosOptions struct {
	defragIO
	Seeds, Method, Dir string
	Force              bool // replace an earlier run's logs in Dir
}

func newDefragDemosCmd(runF func(context.Context, *defragDemosOptions) error) *cobra.Command {
	if runF == nil {
		runF = runDefragDemos
	}
	opts := &defragDemosOptions{}
	var flags defragFlags
	cmd := &cobra.Command{
		Use:   "demos",
		Short: "Write expert migration logs (greedy plans of training seeds' states) for datasets build --env defrag",
		Long: "Makes the starting state of each seed, plans it with --method at the budget (one sample) and\n" +
			"writes DIR/seed-NNNNN.jsonl, the plan as a decision log (as defrag plan --log writes it). Use\n" +
			"training seeds: the held-out seeds (49-53 by default in compare) must stay unseen.",
		Example: "  schedrl defrag demos --seeds 1000-1059 --out runs/defrag-logs\n" +
			"  schedrl datasets build --env defrag --logs 'runs/defrag-logs/*.jsonl' --out runs/defrag-ds",
		Args: cobra.NoArgs,
		RunE: defragRunE(opts, &opts.defragIO, &flags, runF),
	}
	flags.add(cmd.Flags(), "placer")
	cmd.Flags().StringVar(&opts.Seeds, "seeds", "1000-1059", "training state seeds, e.g. 1000-1059")
	cmd.Flags().StringVar(&opts.Method, "method", "greedy", "expert planning method: "+strings.Join(defrag.Methods(), ", "))
	cmd.Flags().StringVar(&opts.Dir, "out", "", "directory of the logs to write")
	cmd.Flags().BoolVar(&opts.Force, "force", false, "replace the logs of an earlier run in --out")
	markOutput(cmd.Flags(), "out", string(manifestkind.LogSet))
	return cmd
}

func runDefragDemos(_ context.Context, opts *defragDemosOptions) error {
	cfg := opts.Config
	if opts.Dir == "" {
		return fmt.Errorf("defrag demos: --out is required")
	}
	seedList, err := config.ParseSeeds(opts.Seeds)
	if err != nil {
		return fmt.Errorf("defrag demos: --seeds: %w", err)
	}
	set, err := atomicfile.BeginSet(opts.Dir, "", "defrag demos --seeds "+opts.Seeds, opts.Force)
	if err != nil {
		return fmt.Errorf("defrag demos: --out: %w", err)
	}
	runs, err := defrag.Demos(stateSpec(cfg), seedList, opts.Method, cfg.Defrag.Placer, defragOptions(cfg), cfg.Defrag.Budget, opts.Dir)
	if err != nil {
		return err
	}
	if err := set.Commit(); err != nil {
		return err
	}
	fmt.Fprintf(opts.Out, "%s: %d migration logs (%s)\n", opts.Dir, len(runs), opts.Method)
	return nil
}
