package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/schedrl/schedrl/datasets"
	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/fungible"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/internal/manifestkind"
	"github.com/schedrl/schedrl/jobs"
	"github.com/schedrl/schedrl/nn"
	"github.com/schedrl/schedrl/pipeline"
	"github.com/schedrl/schedrl/pretrain"
)

// maifsOptions are the flags of `schedrl maifs-bc`.
type maifsOptions struct {
	Out         io.Writer
	Err         io.Writer // progress (expert runs, then epochs) goes here; nil: stderr
	Config      config.Config
	Cluster     string
	ServerGPUs  int
	Generate    []string // one workload per entry and seed
	Seeds       string   // training seeds
	ValSeeds    string   // validation seeds
	Expert      string   // fungible rule
	Order       string   // its job order
	Every       int      // keep every Every-th decision point
	Throughputs string
	Profiles    string
	Mapping     string
	Env         env.MAIFSOptions
	NoAttention bool // the ablation without attention across agents
	Hidden      int
	Heads       int
	HeadHidden  int
	Epochs      int
	Batch       int
	LR          float64
	OrderWeight float64
	Smoothing   float64 // label smoothing over the open candidates
	Seed        int64
	Dir         string
	Dataset     string // write the decision points here as Parquet and train from what reads back
	JSON        bool
}

// maifsSummary is maifs-bc's --json object.
type maifsSummary struct {
	Dir         string  `json:"dir"`
	TrainPoints int     `json:"train_points"`
	ValPoints   int     `json:"val_points"`
	Loss        float64 `json:"train_loss"`
	Agreement   float64 `json:"val_agreement"`
	Exact       float64 `json:"val_exact"`
	Seconds     float64 `json:"seconds"`
}

func newMAIFSCmd(runF func(context.Context, *maifsOptions) error) *cobra.Command {
	if runF == nil {
		runF = runMAIFS
	}
	opts := &maifsOptions{}
	cmd := &cobra.Command{
		Use:   "maifs-bc",
		Short: "Behaviour-clone the multi-agent fungible scheduler from an expert's decisions in the fungible world",
		Long: "Runs the expert (a fungible rule in a job order, default synergy-tune in srtf order: the best\n" +
			"baseline near saturation) on generated workloads, one per --generate entry and seed, keeps its\n" +
			"decision points as multi-agent samples (env maifs), and trains the attention network on them\n" +
			"(candidate cross-entropy plus the Plackett-Luce likelihood of the expert's order). The\n" +
			"checkpoint runs with `schedrl jobs fungible --policy ckpt:DIR`. See docs/maifs.md.",
		Example: "  schedrl maifs-bc --generate jobs=200,lam=1200,multigpu --seeds 1000-1007 --val-seeds 900-901 --out runs/maifs/bc",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			if err := opts.fromConfig(&cfg.MAIFS, cmd.Flags()); err != nil {
				return err
			}
			opts.Out, opts.Config = cmd.OutOrStdout(), cfg
			return runF(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	config.AddFlags(f, "")
	f.StringVar(&opts.Cluster, "cluster", "", "GPUs per type, V100:P100:K80 (default: maifs.cluster)")
	f.IntVar(&opts.ServerGPUs, "servers-gpus", 0, "GPUs per server (default: maifs.servers_gpus)")
	f.StringArrayVar(&opts.Generate, "generate", nil, "training and validation workload, jobs=N,lam=S[,multigpu] (repeatable; default: maifs.generate)")
	f.StringVar(&opts.Seeds, "seeds", "", "training workload seeds (default: maifs.seeds)")
	f.StringVar(&opts.ValSeeds, "val-seeds", "", "validation workload seeds (default: maifs.val_seeds)")
	f.StringVar(&opts.Expert, "expert", "", "the expert's fungible rule (default: maifs.expert)")
	f.StringVar(&opts.Order, "order", "", "the expert's job order (default: maifs.order)")
	f.IntVar(&opts.Every, "every", 0, "keep every N-th decision point (default: maifs.every)")
	f.StringVar(&opts.Throughputs, "throughputs", "", "Gavel's throughput table (default: maifs.throughputs)")
	f.StringVar(&opts.Profiles, "profiles", "", "Synergy's CPU and memory profiles (default: maifs.profiles)")
	f.StringVar(&opts.Mapping, "synergy-map", "", "Gavel job type to Synergy model table (default: maifs.mapping)")
	f.IntVar(&opts.Env.Window, "window", 0, "agents per decision point, oldest first (default: maifs.window)")
	f.IntVar(&opts.Env.Partners, "partners", 0, "co-location candidates per agent (default: maifs.partners)")
	f.BoolVar(&opts.Env.FixedDemand, "fixed-demand", false, "ablation: only the requested GPU count at the fair share (default: maifs.fixed_demand)")
	f.BoolVar(&opts.NoAttention, "no-agent-attention", false, "ablation: no attention across agents")
	f.IntVar(&opts.Hidden, "hidden", 64, "embedding width")
	f.IntVar(&opts.Heads, "heads", pretrain.MAIFSHeads, "attention heads")
	f.IntVar(&opts.HeadHidden, "head-hidden", 64, "actor head width")
	f.IntVar(&opts.Epochs, "epochs", 10, "epochs")
	f.IntVar(&opts.Batch, "batch", 8, "decision points per batch")
	f.Float64Var(&opts.LR, "lr", 1e-3, "Adam learning rate")
	f.Float64Var(&opts.OrderWeight, "order-weight", pretrain.MAIFSOrderWeight, "weight of the order loss")
	f.Float64Var(&opts.Smoothing, "label-smoothing", 0, "share of each agent's target spread over the candidates open at its turn (default: maifs.label_smoothing)")
	f.Int64Var(&opts.Seed, "seed", 1, "network initialisation and batch order seed")
	f.StringVar(&opts.Dir, "out", "", "checkpoint directory (required)")
	markOutput(f, "out", string(manifestkind.Checkpoint))
	f.StringVar(&opts.Dataset, "dataset", "", "also write the expert's decision points to this directory (maifs-transitions-v1 Parquet) and train from what it reads back")
	f.BoolVar(&opts.JSON, "json", false, "print a JSON object")
	return cmd
}

// fromConfig applies the set flags to the maifs section, checks it, and takes the world and
// workloads from it, so one config drives maifs-bc and the PPO fine-tune.
func (o *maifsOptions) fromConfig(m *config.MAIFSConfig, f *pflag.FlagSet) error {
	for name, apply := range map[string]func(){
		"cluster": func() { m.Cluster = o.Cluster }, "servers-gpus": func() { m.ServerGPUs = o.ServerGPUs },
		"generate": func() { m.Generate = o.Generate }, "seeds": func() { m.Seeds = o.Seeds }, "val-seeds": func() { m.ValSeeds = o.ValSeeds },
		"expert": func() { m.Expert = o.Expert }, "order": func() { m.Order = o.Order }, "every": func() { m.Every = o.Every },
		"throughputs": func() { m.Throughputs = o.Throughputs }, "profiles": func() { m.Profiles = o.Profiles }, "synergy-map": func() { m.Mapping = o.Mapping },
		"window": func() { m.Window = o.Env.Window }, "partners": func() { m.Partners = o.Env.Partners }, "fixed-demand": func() { m.FixedDemand = o.Env.FixedDemand },
		"label-smoothing": func() { m.LabelSmoothing = o.Smoothing },
	} {
		if f.Changed(name) {
			apply()
		}
	}
	if err := m.Validate(); err != nil {
		return fmt.Errorf("maifs-bc: maifs.%w", err)
	}
	o.Cluster, o.ServerGPUs, o.Generate, o.Seeds, o.ValSeeds = m.Cluster, m.ServerGPUs, m.Generate, m.Seeds, m.ValSeeds
	o.Expert, o.Order, o.Every, o.Smoothing = m.Expert, m.Order, m.Every, m.LabelSmoothing
	o.Throughputs, o.Profiles, o.Mapping = m.Throughputs, m.Profiles, m.Mapping
	o.Env = datasets.MAIFSOptionsOf(*m)
	return nil
}

// maifsSamples runs the expert on every workload of opts with the given seeds.
func maifsSamples(opts *maifsOptions, e *env.MAIFS, seeds []uint64, p pipeline.Progress) ([]env.MAIFSSample, error) {
	rule, err := fungible.LookupRule(opts.Expert)
	if err != nil {
		return nil, fmt.Errorf("maifs-bc: --expert: %w", err)
	}
	order, err := jobs.NewPolicy(opts.Order)
	if err != nil {
		return nil, fmt.Errorf("maifs-bc: --order: %w", err)
	}
	var out []env.MAIFSSample
	for _, spec := range opts.Generate {
		cfg, err := fungible.ParseWorkloadSpec(spec)
		if err != nil {
			return nil, fmt.Errorf("maifs-bc: --generate: %w", err)
		}
		for _, seed := range seeds {
			cfg.Seed = seed
			work, err := fungible.Generate(e.Model().Tput, e.Model().Sens.JobTypes(), cfg)
			if err != nil {
				return nil, fmt.Errorf("maifs-bc: --generate %s: %w", spec, err)
			}
			rec := &env.MAIFSRecorder{Env: e, Rule: rule, Every: opts.Every}
			if _, err := fungible.Run(e.Cluster(), e.Model(), work, fungible.RunConfig{Policy: rec, Order: order}); err != nil {
				return nil, fmt.Errorf("maifs-bc: %s seed %d: %w", spec, seed, err)
			}
			out = append(out, rec.Samples...)
			p.Add(1)
		}
	}
	return out, nil
}

// maifsDataset writes the samples to --dataset and reads them back through the environment.
func maifsDataset(opts *maifsOptions, e *env.MAIFS, train, val []env.MAIFSSample) ([]env.MAIFSSample, []env.MAIFSSample, error) {
	m := datasets.MAIFSManifest{Cluster: opts.Cluster, ServerGPUs: opts.ServerGPUs, Options: e.Options(),
		Source: map[string]any{"expert": opts.Expert, "order": opts.Order, "generate": opts.Generate, "seeds": opts.Seeds, "val_seeds": opts.ValSeeds, "every": opts.Every}}
	if err := datasets.WriteMAIFS(opts.Dataset, m, map[string][]env.MAIFSSample{datasets.SplitTrain: train, datasets.SplitVal: val}, false); err != nil {
		return nil, nil, fmt.Errorf("maifs-bc: --dataset: %w", err)
	}
	train, err := datasets.ReadMAIFS(opts.Dataset, datasets.SplitTrain, e)
	if err != nil {
		return nil, nil, fmt.Errorf("maifs-bc: %w", err)
	}
	val, err = datasets.ReadMAIFS(opts.Dataset, datasets.SplitVal, e)
	if err != nil {
		return nil, nil, fmt.Errorf("maifs-bc: %w", err)
	}
	return train, val, nil
}

// runMAIFS is the command without cobra.
func runMAIFS(ctx context.Context, opts *maifsOptions) error {
	if opts.Dir == "" {
		return fmt.Errorf("maifs-bc: --out is required")
	}
	seeds, err := config.ParseSeeds(opts.Seeds)
	if err != nil {
		return fmt.Errorf("maifs-bc: --seeds: %w", err)
	}
	valSeeds, err := config.ParseSeeds(opts.ValSeeds)
	if err != nil {
		return fmt.Errorf("maifs-bc: --val-seeds: %w", err)
	}
	world, err := fungible.LoadWorld(fungible.WorldSpec{Cluster: opts.Cluster, ServerGPUs: opts.ServerGPUs,
		Throughputs: opts.Throughputs, Profiles: opts.Profiles, Mapping: opts.Mapping}, "maifs-bc: maifs.")
	if err != nil {
		return err
	}
	e, err := env.NewMAIFS(world.Cluster, world.Model, opts.Env)
	if err != nil {
		return fmt.Errorf("maifs-bc: %w", err)
	}
	w, terminal := opts.Err, false
	if w == nil {
		w, terminal = os.Stderr, isTerminal(os.Stderr)
	}
	p := pipeline.NewProgress(w, terminal, "maifs-bc")
	p.Start(int64(len(opts.Generate)*(len(seeds)+len(valSeeds))), "expert runs")
	train, err := maifsSamples(opts, e, seeds, p)
	if err != nil {
		return err
	}
	val, err := maifsSamples(opts, e, valSeeds, p)
	if err != nil {
		return err
	}
	if opts.Dataset != "" {
		if train, val, err = maifsDataset(opts, e, train, val); err != nil {
			return err
		}
	}
	dev, err := nn.Device(opts.Config.Device)
	if err != nil {
		return fmt.Errorf("maifs-bc: %w", err)
	}
	rev, err := pipeline.CodeRevision()
	if err != nil {
		slog.Warn("maifs-bc: code revision unknown", "err", err)
	}
	arch := nn.NewMAIFSArch(opts.Hidden, opts.Heads, opts.HeadHidden, !opts.NoAttention, e.Options())
	p.Start(int64(opts.Epochs), "epochs")
	res, err := pretrain.RunMAIFS(ctx, pretrain.MAIFSOptions{Arch: arch, Train: train, Val: val, Epochs: opts.Epochs, Batch: opts.Batch,
		LR: opts.LR, OrderWeight: opts.OrderWeight, LabelSmoothing: opts.Smoothing, Seed: opts.Seed, Dev: dev, Out: opts.Dir,
		Lineage: nn.Lineage{CodeRevision: rev, Hyper: map[string]any{"expert": opts.Expert, "order": opts.Order, "generate": opts.Generate, "seeds": opts.Seeds}},
		Progress: func(epoch int, loss, agree float64) {
			p.Add(1)
			if !opts.JSON {
				fmt.Fprintf(opts.Out, "epoch %d: loss %.4f, validation agreement %.2f%%\n", epoch, loss, 100*agree)
			}
		}})
	if err != nil {
		return fmt.Errorf("maifs-bc: %w", err)
	}
	s := maifsSummary{Dir: opts.Dir, TrainPoints: len(train), ValPoints: len(val), Loss: res.Loss, Agreement: res.Agreement, Exact: res.Exact, Seconds: res.Seconds}
	if opts.JSON {
		return json.NewEncoder(opts.Out).Encode(s)
	}
	_, err = fmt.Fprintf(opts.Out, "%s: %d training and %d validation decision points, loss %.4f, validation agreement %.2f%% (exact %.2f%%), %.1f s\n",
		s.Dir, s.TrainPoints, s.ValPoints, s.Loss, 100*s.Agreement, 100*s.Exact, s.Seconds)
	return err
}
