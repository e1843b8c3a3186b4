package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/schedrl/schedrl/internal/atomicfile"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/internal/manifestkind"
	"github.com/schedrl/schedrl/policy"
	"github.com/schedrl/schedrl/sim"
)

// simSummary is the --json object of one run.
type simSummary struct {
	Policy           string         `json:"policy"`
	Pods             string         `json:"pods,omitempty"`
	Seed             uint64         `json:"seed"`
	Tasks            int            `json:"tasks"`
	Placed           int            `json:"placed"`
	Failed           int            `json:"failed"`
	FailedByKind     map[string]int `json:"failed_by_kind"`
	AllocGPUPct      float64        `json:"alloc_gpu_pct"`
	AllocMilliGPUPct float64        `json:"alloc_milligpu_pct"`
	AllocCPUPct      float64        `json:"alloc_cpu_pct"`
	AllocMemPct      float64        `json:"alloc_mem_pct"`
	OccupiedGPUPct   float64        `json:"occupied_gpu_pct"`
	FragGPU          float64        `json:"frag_gpu"`
	FragRatioPct     float64        `json:"frag_ratio_pct"`
	Log              string         `json:"log,omitempty"`
	WallSeconds      float64        `json:"wall_seconds"`
}

func summarise(policyName, pods string, seed uint64, r sim.RunResult, wall float64) simSummary {
	placedPct := 0.0
	if r.ArrivedMilli > 0 {
		placedPct = 100 * float64(r.PlacedMilli) / float64(r.ArrivedMilli)
	}
	return simSummary{Policy: policyName, Pods: pods, Seed: seed, Tasks: r.Tasks, Placed: r.Placed, Failed: r.Failed,
		FailedByKind: r.FailedByKind, AllocGPUPct: r.Final.GPUAllocPct, AllocMilliGPUPct: placedPct,
		AllocCPUPct: r.Final.CPUAllocPct, AllocMemPct: r.Final.MemAllocPct, OccupiedGPUPct: r.Final.GPUOccupiedPct,
		FragGPU: r.Final.FragGPU, FragRatioPct: r.Final.FragRatioPct, WallSeconds: wall}
}

// simOptions are sim's inputs: the config with the flags applied, and the outputs to write.
type simOptions struct {
	Out     io.Writer
	Config  config.Config // Sim.Pods is the first of PodList
	PodList []string
	Seeds   string // batch seeds; set (or several PodList entries) makes a batch
	Batch   bool
	Curve   string // --out
	Log     string
	LogDir  string
	JSON    bool
	Workers int
	Force   bool // replace an earlier batch's logs in LogDir
}

func newSimCmd(runF func(context.Context, *simOptions) error) *cobra.Command {
	if runF == nil {
		runF = runSim
	}
	opts := &simOptions{}
	var (
		pods           []string
		nodes, pol     string
		tune, coverage float64
		seed           uint64
	)
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Run a placement expert through the ATC'23 arrival protocol: curve, decision log, summary",
		Long: "Samples the workload (tuning ratio and seed as in the FGD paper), places its tasks one by one\n" +
			"with --policy (" + strings.Join(policy.Placers(), ", ") + "), and writes the curve CSV\n" +
			"(arrived_pct,alloc_gpu_pct,frag_gpu,frag_ratio_pct), the decision log (JSON lines, see\n" +
			"docs/decision-log.md) and a summary. With --seeds or several --pods it runs a batch in\n" +
			"parallel, one decision log per (pods, seed) in --log-dir. Flags override the config's sim section.\n\n" +
			"--json fields: alloc_gpu_pct is allocated GPU milli / GPU capacity (the paper's headline, as\n" +
			"in the curve); alloc_milligpu_pct is the placed share of the arrived GPU request (milli);\n" +
			"alloc_cpu_pct / alloc_mem_pct are CPU and memory allocated; occupied_gpu_pct counts GPUs with\n" +
			"any share in use; frag_gpu is the FGD fragment in GPUs and frag_ratio_pct its share of idle GPU.",
		Example: "  schedrl sim --nodes data/openb/openb_node_list_gpu_node.csv --pods data/openb/openb_pod_list_default.csv --policy fgd --out curve.csv --json\n" +
			"  schedrl sim --policy fgd --pods data/openb/openb_pod_list_default.csv,data/openb/openb_pod_list_gpushare40.csv --seeds 42-46 --log-dir runs/logs",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			sc := &cfg.Sim
			f := cmd.Flags()
			for name, apply := range map[string]func(){
				"nodes": func() { sc.Nodes = nodes }, "policy": func() { sc.Policy = pol },
				"tune": func() { sc.Tune = tune }, "seed": func() { sc.Seed = seed },
				"coverage": func() { sc.Coverage = coverage },
			} {
				if f.Changed(name) {
					apply()
				}
			}
			opts.PodList = []string{sc.Pods}
			if f.Changed("pods") {
				opts.PodList = splitList(pods)
			}
			if len(opts.PodList) > 0 {
				sc.Pods = opts.PodList[0]
			}
			opts.Batch = f.Changed("seeds") || len(opts.PodList) > 1
			opts.Out, opts.Config = cmd.OutOrStdout(), cfg
			return runF(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	config.AddFlags(f, "")
	f.StringVar(&nodes, "nodes", "", "openb node list CSV")
	f.StringSliceVar(&pods, "pods", nil, "openb pod list CSV (several, comma-separated, for a batch)")
	f.StringVar(&pol, "policy", "", "placement policy: "+strings.Join(policy.Placers(), ", "))
	f.Float64Var(&tune, "tune", 0, "workload tuning ratio: total GPU request / GPU capacity (default 1.3)")
	f.Uint64Var(&seed, "seed", 0, "workload and tie-break seed (default 42)")
	f.Float64Var(&coverage, "coverage", 0, "share of tasks the typical shapes cover (default 0.95)")
	f.StringVar(&opts.Seeds, "seeds", "", "batch: seeds, e.g. 42-46 or 42,44")
	f.StringVar(&opts.Curve, "out", "", "write the curve CSV here")
	f.StringVar(&opts.Log, "log", "", "write the decision log (JSON lines) here")
	f.StringVar(&opts.LogDir, "log-dir", "", "batch: write one decision log per (pods, seed) here")
	f.BoolVar(&opts.JSON, "json", false, "print a JSON summary (one object per run)")
	intFlag(f, &opts.Workers, "workers", 0, 0, "batch: concurrent runs (0: one per CPU)")
	f.BoolVar(&opts.Force, "force", false, "batch: replace the logs of an earlier batch in --log-dir")
	markOutput(f, "out", fileOutput)
	markOutput(f, "log", fileOutput)
	markOutput(f, "log-dir", string(manifestkind.LogSet))
	return cmd
}

func runSim(ctx context.Context, opts *simOptions) error {
	start := time.Now()
	cfg := opts.Config
	sc := cfg.Sim
	if err := sc.Validate(); err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	newPlacer, cleanup, err := simPlacer(cfg, sc.Policy)
	if err != nil {
		return err
	}
	defer cleanup()
	exp := sim.Experiment{NodesPath: sc.Nodes, PodsPath: sc.Pods, Tune: sc.Tune, Seed: sc.Seed, Coverage: sc.Coverage}
	if opts.Batch {
		if opts.Curve != "" || opts.Log != "" {
			return fmt.Errorf("sim: --out and --log are for a single run; a batch writes logs to --log-dir")
		}
		return simBatch(ctx, opts, exp, sc.Policy, newPlacer)
	}
	if opts.LogDir != "" {
		return fmt.Errorf("sim: --log-dir is for batches (--seeds or several --pods); use --log")
	}
	p, err := sim.Prepare(exp)
	if err != nil {
		return err
	}
	placer, _ := newPlacer()
	res, err := p.RunLogged(ctx, placer, opts.Log)
	if err != nil {
		return err
	}
	if opts.Curve != "" {
		if err := sim.WriteCurveFile(opts.Curve, res.Curve); err != nil {
			return err
		}
	}
	s := summarise(placer.Name(), "", sc.Seed, res, time.Since(start).Seconds())
	s.Log = opts.Log
	if opts.JSON {
		return json.NewEncoder(opts.Out).Encode(s)
	}
	fmt.Fprintf(opts.Out, "%s seed %d: %d tasks, %d placed, %d failed; GPU allocated %.2f%%, fragment %.1f GPUs (%.1f%% of idle); %.2f s\n",
		s.Policy, s.Seed, s.Tasks, s.Placed, s.Failed, s.AllocGPUPct, s.FragGPU, s.FragRatioPct, s.WallSeconds)
	return nil
}

// simBatch runs every (pods, seed) of opts; --log-dir is a set of logs (atomicfile.Set), marked
// incomplete until every run has written its log.
func simBatch(ctx context.Context, opts *simOptions, base sim.Experiment, pol string, newPlacer func() (sim.Placer, error)) error {
	w, podList, seedSpec, dir, asJSON, workers := opts.Out, opts.PodList, opts.Seeds, opts.LogDir, opts.JSON, opts.Workers
	seedList := []uint64{base.Seed}
	if seedSpec != "" {
		var err error
		if seedList, err = config.ParseSeeds(seedSpec); err != nil {
			return fmt.Errorf("sim: --seeds: %w", err)
		}
	}
	var set *atomicfile.Set
	if dir != "" {
		var err error
		if set, err = atomicfile.BeginSet(dir, "", "sim --seeds "+seedSpec, opts.Force); err != nil {
			return fmt.Errorf("sim: --log-dir: %w", err)
		}
	}
	var jobs []sim.Job
	for _, pods := range podList {
		for _, s := range seedList {
			e := base
			e.PodsPath, e.Seed = pods, s
			j := sim.Job{Experiment: e}
			if dir != "" {
				stem := strings.TrimSuffix(filepath.Base(pods), filepath.Ext(pods))
				j.LogPath = filepath.Join(dir, fmt.Sprintf("%s_%s_seed%d.jsonl", stem, pol, s))
			}
			jobs = append(jobs, j)
		}
	}
	results := sim.RunBatch(ctx, jobs, newPlacer, workers)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if !asJSON {
		fmt.Fprintln(tw, "pods\tseed\ttasks\tfailed\talloc_gpu_pct\tfrag_gpu\tlog")
	}
	var errs []string
	for _, r := range results {
		if r.Err != nil {
			errs = append(errs, fmt.Sprintf("%s seed %d: %v", r.PodsPath, r.Seed, r.Err))
			continue
		}
		s := summarise(pol, r.PodsPath, r.Seed, r.Result, r.WallSeconds)
		s.Log = r.LogPath
		if asJSON {
			if err := json.NewEncoder(w).Encode(s); err != nil {
				return err
			}
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.2f\t%.1f\t%s\n", filepath.Base(r.PodsPath), r.Seed, s.Tasks, s.Failed, s.AllocGPUPct, s.FragGPU, r.LogPath)
	}
	tw.Flush()
	if len(errs) > 0 {
		return fmt.Errorf("sim: %d of %d runs failed:\n  %s", len(errs), len(results), strings.Join(errs, "\n  "))
	}
	if err := ctx.Err(); err != nil || set == nil {
		return err
	}
	return set.Commit()
}
