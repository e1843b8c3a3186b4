package config

import (
	"fmt"
	"slices"
	"strings"
)

// TimedKinds are the timed worlds eval can run (eval.timed.kind); "" is the arrival protocol.
var TimedKinds = []string{"jobs", "fungible", "tasks", "defrag-online", "drr"}

// TimedEvalConfig is eval's timed-workload form (eval.timed): with Kind set, eval runs the
// policies on timed workloads of that world instead of the arrival protocol. eval.policies then
// names that world's policies, eval.traces its workloads, and eval.seeds, out, parallelism and
// baseline keep their meaning.
type TimedEvalConfig struct {
	// Kind is the world: jobs (Gavel's DL jobs on GPU types), fungible (the same jobs as whole
	// allocations on servers), tasks (openb tasks with run times); "" leaves timed eval off.
	Kind string `mapstructure:"kind" yaml:"kind"`
	// Cluster is the GPUs per type, V100:P100:K80 (jobs, fungible).
	Cluster string `mapstructure:"cluster" yaml:"cluster"`
	// ServersGPUs groups the jobs world's GPUs into servers (V100:P100:K80 sizes) or is the
	// fungible world's server size in GPUs (one number; default 8 there).
	ServersGPUs string `mapstructure:"servers_gpus" yaml:"servers_gpus"`
	// Round is the round length in seconds (jobs, fungible).
	Round float64 `mapstructure:"round" yaml:"round"`
	// Throughputs is Gavel's throughput table; Profiles and SynergyMap are Synergy's CPU and
	// memory profiles and the job-type mapping (fungible, and generated workloads).
	Throughputs string `mapstructure:"throughputs" yaml:"throughputs"`
	Profiles    string `mapstructure:"profiles" yaml:"profiles"`
	SynergyMap  string `mapstructure:"synergy_map" yaml:"synergy_map"`
	// Load is the tasks world's offered load for Poisson resampling (0: the trace's timestamps);
	// Tasks ends the arrivals after that many; Cap cuts run times (s, 0: none); Warmup is the
	// unmeasured start (s).
	Load   float64 `mapstructure:"load" yaml:"load"`
	Tasks  int     `mapstructure:"tasks" yaml:"tasks"`
	Cap    float64 `mapstructure:"cap" yaml:"cap"`
	Warmup float64 `mapstructure:"warmup" yaml:"warmup"`
	// Queue is the tasks world's queue discipline (backfill, fifo); its policies are placers.
	Queue string `mapstructure:"queue" yaml:"queue"`
	// SeriesStep spaces the tasks world's time series (s); the jobs worlds sample every round.
	SeriesStep float64 `mapstructure:"series_step" yaml:"series_step"`
	// SampleNodes runs each drr timeline on that many nodes of eval.nodes drawn by its seed
	// (DRR's sub-clusters; 0: all of them).
	SampleNodes int `mapstructure:"sample_nodes" yaml:"sample_nodes"`
}

// SetDefaults is Gavel's 36:36:36 cluster in 360 s rounds, and openb at offered load 1.0 with
// 150,000 tasks, a 4 h cap and a 4 h warm-up, the configuration docs/timed.md measures.
func (c *TimedEvalConfig) SetDefaults() {
	c.Cluster = "36:36:36"
	c.Round = 360
	c.Throughputs = "data/gavel/simulation_throughputs.json"
	c.Profiles = "data/synergy/profiles.json"
	c.SynergyMap = "data/fungible/gavel_synergy_models.csv"
	c.Load = 1.0
	c.Tasks = 150000
	c.Cap = 4 * 3600
	c.Warmup = 4 * 3600
	c.Queue = "backfill"
	c.SeriesStep = 60
}

// Validate checks the shape of every key; eval checks that the files and names resolve. Errors
// start with the key under eval.
func (c TimedEvalConfig) Validate() error {
	pos := func(x float64) bool { return x > 0 && x < 1e300 }
	nonNeg := func(x float64) bool { return x >= 0 && x < 1e300 }
	switch {
	case c.Kind != "" && !slices.Contains(TimedKinds, c.Kind):
		return fmt.Errorf("timed.kind: %q, want one of %s (or empty: the arrival protocol)", c.Kind, strings.Join(TimedKinds, ", "))
	case strings.TrimSpace(c.Cluster) == "":
		return fmt.Errorf("timed.cluster: must be V100:P100:K80 GPU counts, e.g. 36:36:36")
	case !pos(c.Round):
		return fmt.Errorf("timed.round: must be > 0 seconds, got %v", c.Round)
	case !nonNeg(c.Load):
		return fmt.Errorf("timed.load: must be >= 0 (0: the trace's timestamps), got %v", c.Load)
	case c.Tasks < 0:
		return fmt.Errorf("timed.tasks: must be >= 0, got %d", c.Tasks)
	case c.Load > 0 && c.Tasks == 0:
		return fmt.Errorf("timed.tasks: a Poisson workload (timed.load %v) needs a task count > 0", c.Load)
	case !nonNeg(c.Cap):
		return fmt.Errorf("timed.cap: must be >= 0 seconds (0: no cap), got %v", c.Cap)
	case !nonNeg(c.Warmup):
		return fmt.Errorf("timed.warmup: must be >= 0 seconds, got %v", c.Warmup)
	case strings.TrimSpace(c.Queue) == "":
		return fmt.Errorf("timed.queue: must name a queue discipline (backfill, fifo)")
	case c.SampleNodes < 0:
		return fmt.Errorf("timed.sample_nodes: must be >= 0 (0: every node), got %d", c.SampleNodes)
	case !pos(c.SeriesStep):
		return fmt.Errorf("timed.series_step: must be > 0 seconds, got %v", c.SeriesStep)
	}
	for key, path := range map[string]string{"throughputs": c.Throughputs, "profiles": c.Profiles, "synergy_map": c.SynergyMap} {
		if strings.TrimSpace(path) == "" && c.Kind != "tasks" && c.Kind != "" {
			return fmt.Errorf("timed.%s: must name a file", key)
		}
	}
	return nil
}
