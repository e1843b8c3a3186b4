package config

import (
	"fmt"
	"math"
	"strings"
)

// MAIFSConfig configures the multi-agent fungible scheduler (docs/maifs.md): the fungible world
// it schedules (cluster, server size, the measured throughput and profile tables), the
// environment's options, the expert behaviour cloning imitates, and the workloads: the expert's
// (generate x seeds, every every-th decision point kept), validation's (generate x val_seeds),
// the PPO fine-tune's episodes (ppo_generate x ppo_seeds, finetune.env: maifs) and the held-out
// seeds that neither training nor validation may use. One section drives `schedrl maifs-bc`
// (its flags override) and `schedrl finetune`.
type MAIFSConfig struct {
	// Cluster is GPUs per type, V100:P100:K80, in servers of ServerGPUs GPUs.
	Cluster    string `mapstructure:"cluster" yaml:"cluster"`
	ServerGPUs int    `mapstructure:"servers_gpus" yaml:"servers_gpus"`
	// Gavel's throughput table, Synergy's CPU and memory profiles, and the Gavel job type to
	// Synergy model table.
	Throughputs string `mapstructure:"throughputs" yaml:"throughputs"`
	Profiles    string `mapstructure:"profiles" yaml:"profiles"`
	Mapping     string `mapstructure:"mapping" yaml:"mapping"`
	// Environment (env.MAIFSOptions): agents per decision point, co-location candidates per
	// agent, the reward's makespan weight, and the fixed-demand ablation.
	Window int `mapstructure:"window" yaml:"window"`
	// WindowOrder chooses the Window agents when more jobs are present (env.MAIFSOptions):
	// "age" (the oldest; empty reads as age when training) or "srtf" (the least remaining
	// time). Set, it also overrides a checkpoint's own when `schedrl jobs` or the eval runs it:
	// which jobs are agents is no weight of the network.
	WindowOrder    string  `mapstructure:"window_order" yaml:"window_order"`
	Partners       int     `mapstructure:"partners" yaml:"partners"`
	MakespanWeight float64 `mapstructure:"makespan_weight" yaml:"makespan_weight"`
	FixedDemand    bool    `mapstructure:"fixed_demand" yaml:"fixed_demand"`
	// Expert is the fungible rule behaviour cloning imitates, Order its job order.
	Expert string `mapstructure:"expert" yaml:"expert"`
	Order  string `mapstructure:"order" yaml:"order"`
	// Generate are the expert's and validation's workloads (jobs=N,lam=S[,multigpu]), one run
	// per entry and seed; Every keeps every Every-th decision point of the expert's runs.
	Generate []string `mapstructure:"generate" yaml:"generate"`
	Seeds    string   `mapstructure:"seeds" yaml:"seeds"`
	ValSeeds string   `mapstructure:"val_seeds" yaml:"val_seeds"`
	Every    int      `mapstructure:"every" yaml:"every"`
	// LabelSmoothing is behaviour cloning's share of each agent's target spread over the
	// candidates open at its turn (pretrain.MAIFSOptions.LabelSmoothing).
	LabelSmoothing float64 `mapstructure:"label_smoothing" yaml:"label_smoothing"`
	// PPOGenerate and PPOSeeds are the fine-tune's episodes: each draws a workload and a seed
	// uniformly from these.
	PPOGenerate []string `mapstructure:"ppo_generate" yaml:"ppo_generate"`
	PPOSeeds    string   `mapstructure:"ppo_seeds" yaml:"ppo_seeds"`
	// Shaping weighs the PPO reward's potential-based shaping term, γΦ(s') − Φ(s) with Φ minus
	// the work left to the jobs of s in hours at their reference speeds (docs/maifs.md,
	// "Reward"); 0 trains on the plain reward.
	Shaping float64 `mapstructure:"shaping" yaml:"shaping"`
	// HeldOut are the seeds the policies are compared on (docs/maifs.md); no training or
	// validation seed may be one of them.
	HeldOut string `mapstructure:"held_out_seeds" yaml:"held_out_seeds"`
}

// SetDefaults is docs/maifs.md's measured recipe: 36:36:36 in 8-GPU servers, the vendored
// tables, window 100 with 2 partners, makespan weight 1, TUNE in SRTF order on 300 multi-GPU
// jobs at lam 900 and 1500 s (seeds 1000-1003, every 4th decision point, no label smoothing),
// validation seeds 900-902; PPO episodes of 100 jobs at the same rates (shorter, so episodes
// end within a run), seeds 2000-9999, the reward shaped with weight 1; held-out seeds 49-58.
func (c *MAIFSConfig) SetDefaults() {
	*c = MAIFSConfig{
		Cluster: "36:36:36", ServerGPUs: 8,
		Throughputs: "data/gavel/simulation_throughputs.json",
		Profiles:    "data/synergy/profiles.json",
		Mapping:     "data/fungible/gavel_synergy_models.csv",
		Window:      100, Partners: 2, MakespanWeight: 1,
		Expert: "synergy-tune", Order: "srtf",
		Generate: []string{"jobs=300,lam=900,multigpu", "jobs=300,lam=1500,multigpu"},
		Seeds:    "1000-1003", ValSeeds: "900-902", Every: 4,
		PPOGenerate: []string{"jobs=100,lam=900,multigpu", "jobs=100,lam=1500,multigpu"},
		PPOSeeds:    "2000-9999", Shaping: 1,
		HeldOut: "49-58",
	}
}

// Validate checks every key's range and that the held-out, validation and training seeds are
// apart (behaviour cloning's and PPO's training seeds may meet); the tables, rule names and workload specs are checked where they are read.
func (c MAIFSConfig) Validate() error {
	switch {
	case !strings.Contains(c.Cluster, ":"):
		return fmt.Errorf("cluster: want GPUs per type as V100:P100:K80, got %q", c.Cluster)
	case c.ServerGPUs < 1:
		return fmt.Errorf("servers_gpus: must be >= 1, got %d", c.ServerGPUs)
	case c.Throughputs == "":
		return fmt.Errorf("throughputs: must name Gavel's throughput table")
	case c.Profiles == "":
		return fmt.Errorf("profiles: must name Synergy's profile table")
	case c.Mapping == "":
		return fmt.Errorf("mapping: must name the Gavel to Synergy model table")
	case c.Window < 1:
		return fmt.Errorf("window: must be >= 1, got %d", c.Window)
	case c.WindowOrder != "" && c.WindowOrder != "age" && c.WindowOrder != "srtf":
		return fmt.Errorf("window_order: must be age or srtf, got %q", c.WindowOrder)
	case c.Partners < 1: // the environment reads 0 as its default, 2
		return fmt.Errorf("partners: must be >= 1, got %d", c.Partners)
	case !(c.MakespanWeight > 0) || math.IsInf(c.MakespanWeight, 0): // 0 reads as the default, 1
		return fmt.Errorf("makespan_weight: must be > 0, got %v", c.MakespanWeight)
	case c.Expert == "":
		return fmt.Errorf("expert: must name a fungible rule")
	case c.Order == "":
		return fmt.Errorf("order: must name a job order")
	case len(c.Generate) == 0:
		return fmt.Errorf("generate: list at least one workload (jobs=N,lam=S[,multigpu])")
	case c.Every < 1:
		return fmt.Errorf("every: must be >= 1, got %d", c.Every)
	case !(c.LabelSmoothing >= 0 && c.LabelSmoothing < 1):
		return fmt.Errorf("label_smoothing: must be in [0, 1), got %v", c.LabelSmoothing)
	case c.Shaping < 0 || math.IsInf(c.Shaping, 0) || math.IsNaN(c.Shaping):
		return fmt.Errorf("shaping: must be >= 0, got %v", c.Shaping)
	case len(c.PPOGenerate) == 0:
		return fmt.Errorf("ppo_generate: list at least one workload (jobs=N,lam=S[,multigpu])")
	}
	for _, k := range []struct {
		key  string
		list []string
	}{{"generate", c.Generate}, {"ppo_generate", c.PPOGenerate}} {
		for i, g := range k.list {
			if strings.TrimSpace(g) == "" {
				return fmt.Errorf("%s[%d]: empty", k.key, i)
			}
		}
	}
	held, err := ParseSeeds(c.HeldOut)
	if err != nil {
		return fmt.Errorf("held_out_seeds: %w", err)
	}
	// Each seed may serve one purpose: held out, validation, or training.
	owner := map[uint64]string{}
	for _, s := range held {
		owner[s] = "held_out_seeds"
	}
	for _, k := range []struct{ key, seeds string }{{"val_seeds", c.ValSeeds}, {"seeds", c.Seeds}, {"ppo_seeds", c.PPOSeeds}} {
		seeds, err := ParseSeeds(k.seeds)
		if err != nil {
			return fmt.Errorf("%s: %w", k.key, err)
		}
		for _, s := range seeds {
			if o := owner[s]; o != "" && o != "seeds" {
				return fmt.Errorf("%s: seed %d is also in %s", k.key, s, o)
			}
			owner[s] = k.key
		}
	}
	return nil
}
