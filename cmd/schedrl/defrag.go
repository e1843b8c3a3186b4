package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/schedrl/schedrl/defrag"
	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/internal/config"
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
	f.IntVar(&d.maxPending, "max-pending", 0, "pending queue length cap (default 200)")
	f.Float64Var(&d.budget, "budget", 0, "migration budget: a count, or a fraction of running tasks when < 1 (default 50)")
	f.IntVar(&d.samples, "samples", 0, "sample K plans and keep the best (default 1)")
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

func init() {
	cmd := &cobra.Command{
		Use:   "defrag",
		Short: "Defragmentation: fragmented starting states, migration plans, method comparison",
	}

	var snapFlags defragFlags
	var snapOut string
	snapshot := &cobra.Command{
		Use:   "snapshot",
		Short: "Make a fragmented starting state (arrivals, random departures, pending queue) as a snapshot JSON",
		Example: "  schedrl defrag snapshot --nodes openb_node_list_gpu_node.csv --pods openb_pod_list_default.csv \\\n" +
			"    --policy fgd --seed 49 --departures 0.1 --out snap.json",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := snapFlags.load(cmd)
			if err != nil {
				return err
			}
			if snapOut == "" {
				return fmt.Errorf("defrag snapshot: --out is required")
			}
			s, err := defrag.MakeState(stateSpec(cfg))
			if err != nil {
				return err
			}
			if err := sim.WriteSnapshotFile(snapOut, s); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %d nodes, %d running tasks, %d pending\n", snapOut, len(s.Nodes), len(s.Running), len(s.Pending))
			return nil
		},
	}
	snapFlags.add(snapshot.Flags(), "policy")
	snapshot.Flags().StringVar(&snapOut, "out", "", "snapshot JSON to write")

	var planFlags defragFlags
	var snapPath, method, model, planOut, planLog string
	plan := &cobra.Command{
		Use:   "plan",
		Short: "Plan migrations for a snapshot with a heuristic (--policy) or a checkpoint (--model) and write them with predicted outcomes",
		Long: "Plans at most --budget migrations for the snapshot with a planning method (" + strings.Join(defrag.Methods(), ", ") + "),\n" +
			"replays the plan in the simulator (every step is checked) and writes plan.json: the ordered migrations\n" +
			"with the fragment ratio and pending-task placement predicted after each. --samples K keeps the best\n" +
			"of K sampled plans by reward (a --model's sample 0 is its greedy decoding, the others are drawn from\n" +
			"its masked softmax). Pending tasks are placed with the defrag section's placer (fgd).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := planFlags.load(cmd)
			if err != nil {
				return err
			}
			switch {
			case snapPath == "" || planOut == "":
				return fmt.Errorf("defrag plan: --snapshot and --out are required")
			case model != "" && cmd.Flags().Changed("policy"):
				return fmt.Errorf("defrag plan: give --model or --policy, not both")
			}
			var planner defrag.Planner
			if model != "" {
				planner, err = modelPlanner(cfg, model)
			} else {
				planner, err = defrag.NewPlanner(method)
			}
			if err != nil {
				return fmt.Errorf("defrag plan: %w", err)
			}
			s, _, _, err := sim.ReadSnapshotFile(snapPath)
			if err != nil {
				return err
			}
			pr, err := defrag.NewProblem(s, cfg.Defrag.Placer, defragOptions(cfg))
			if err != nil {
				return fmt.Errorf("%s: %w", snapPath, err)
			}
			pr.Options.Budget = defrag.BudgetFor(cfg.Defrag.Budget, pr.Cluster.Running())
			p, err := defrag.Best(pr, planner, cfg.Defrag.Samples, cfg.Sim.Seed)
			if err != nil {
				return err
			}
			if planLog != "" {
				meta := map[string]string{"protocol": "defrag-plan", "policy": p.Method, "snapshot": snapPath}
				if err := defrag.WriteLog(planLog, pr, p, meta); err != nil {
					return err
				}
			}
			if err := defrag.WritePlan(planOut, p); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %d migrations (budget %d); fragment %.1f%% -> %.1f%% of idle; pending placeable %d -> %d tasks (%.1f -> %.1f GPUs); %.3f s\n",
				p.Method, len(p.Steps), p.Budget, p.Before.FragRatioPct, p.After.FragRatioPct, p.Before.PendingPlaced, p.After.PendingPlaced,
				p.Before.PendingGPUs, p.After.PendingGPUs, p.WallSeconds)
			return nil
		},
	}
	planFlags.add(plan.Flags(), "placer")
	plan.Flags().StringVar(&snapPath, "snapshot", "", "snapshot JSON (from defrag snapshot)")
	plan.Flags().StringVar(&method, "policy", "greedy", "planning method: "+strings.Join(defrag.Methods(), ", "))
	plan.Flags().StringVar(&model, "model", "", "plan with a trained defrag checkpoint (pretrain/finetune output on a defrag dataset) instead of --policy")
	plan.Flags().StringVar(&planOut, "out", "", "plan JSON to write")
	plan.Flags().StringVar(&planLog, "log", "", "also write the plan as a decision log (start as arrive/bind, then migrate events)")

	var cmpFlags defragFlags
	var seeds, methods, cmpModel string
	var asJSON bool
	compare := &cobra.Command{
		Use:   "compare",
		Short: "Make the state of each seed and plan it with every method at the same budget; print before/after",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := cmpFlags.load(cmd)
			if err != nil {
				return err
			}
			seedList, err := config.ParseSeeds(seeds)
			if err != nil {
				return fmt.Errorf("defrag compare: --seeds: %w", err)
			}
			planners, err := defrag.NewPlanners(splitList(strings.Split(methods, ",")))
			if err != nil {
				return fmt.Errorf("defrag compare: %w", err)
			}
			if cmpModel != "" {
				p, err := modelPlanner(cfg, cmpModel)
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
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(rows)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "seed\tmethod\tfrag_ratio_before\tfrag_ratio_after\tpending_tasks_placed\tpending_gpus_placed\tmigrations\tmoved_gpus\treward\tseconds")
			for _, r := range rows {
				fmt.Fprintf(tw, "%d\t%s\t%.2f\t%.2f\t%d\t%.1f\t%d\t%.1f\t%.2f\t%.3f\n", r.Seed, r.Method, r.Before.FragRatioPct, r.After.FragRatioPct,
					r.After.PendingPlaced-r.Before.PendingPlaced, r.After.PendingGPUs-r.Before.PendingGPUs, r.After.MigrationsUsed, r.After.MovedGPUs, r.After.Reward, r.Wall)
			}
			return tw.Flush()
		},
	}
	cmpFlags.add(compare.Flags(), "placer")
	compare.Flags().StringVar(&seeds, "seeds", "49-53", "held-out state seeds, e.g. 49-53")
	compare.Flags().StringVar(&methods, "methods", strings.Join(defrag.Methods(), ","), "planning methods to compare")
	compare.Flags().BoolVar(&asJSON, "json", false, "print the rows as JSON")
	compare.Flags().StringVar(&cmpModel, "model", "", "also plan with this defrag checkpoint (method \"model\")")

	var demoFlags defragFlags
	var demoSeeds, demoMethod, demoOut string
	demos := &cobra.Command{
		Use:   "demos",
		Short: "Write expert migration logs (greedy plans of training seeds' states) for datasets build --env defrag",
		Long: "Makes the starting state of each seed, plans it with --method at the budget (one sample) and\n" +
			"writes DIR/seed-NNNNN.jsonl, the plan as a decision log (as defrag plan --log writes it). Use\n" +
			"training seeds: the held-out seeds (49-53 by default in compare) must stay unseen.",
		Example: "  schedrl defrag demos --seeds 1000-1059 --out runs/defrag-logs\n" +
			"  schedrl datasets build --env defrag --logs 'runs/defrag-logs/*.jsonl' --out runs/defrag-ds",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := demoFlags.load(cmd)
			if err != nil {
				return err
			}
			if demoOut == "" {
				return fmt.Errorf("defrag demos: --out is required")
			}
			seedList, err := config.ParseSeeds(demoSeeds)
			if err != nil {
				return fmt.Errorf("defrag demos: --seeds: %w", err)
			}
			runs, err := defrag.Demos(stateSpec(cfg), seedList, demoMethod, cfg.Defrag.Placer, defragOptions(cfg), cfg.Defrag.Budget, demoOut)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %d migration logs (%s)\n", demoOut, len(runs), demoMethod)
			return nil
		},
	}
	demoFlags.add(demos.Flags(), "placer")
	demos.Flags().StringVar(&demoSeeds, "seeds", "1000-1059", "training state seeds, e.g. 1000-1059")
	demos.Flags().StringVar(&demoMethod, "method", "greedy", "expert planning method: "+strings.Join(defrag.Methods(), ", "))
	demos.Flags().StringVar(&demoOut, "out", "", "directory of the logs to write")

	cmd.AddCommand(snapshot, plan, compare, demos)
	cmd.AddCommand(newDefragOnlineCmd(runDefragOnline))
	rootCmd.AddCommand(cmd)
}
