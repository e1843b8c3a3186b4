package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// EvalConfig configures `schedrl eval`: which policies run on which held-out workloads.
type EvalConfig struct {
	// Policies are heuristic names (fgd, bestfit, ...), ckpt:DIR or registry MODEL@VERSION|ALIAS.
	Policies []string `mapstructure:"policies" yaml:"policies"`
	// Traces are openb pod-list short names (default, gpushare40, ...) or CSV paths.
	Traces []string `mapstructure:"traces" yaml:"traces"`
	// TracesDir holds openb_pod_list_NAME.csv for short trace names.
	TracesDir string `mapstructure:"traces_dir" yaml:"traces_dir"`
	// Nodes is the node list CSV of the evaluated cluster.
	Nodes string `mapstructure:"nodes" yaml:"nodes"`
	// Seeds are held-out workload seeds: "49-53", "49,50,51" or a mix.
	Seeds string `mapstructure:"seeds" yaml:"seeds"`
	// Tune is the workload tuning ratio (total GPU request / cluster GPU capacity).
	Tune float64 `mapstructure:"tune" yaml:"tune"`
	// Out is the report directory, replaced as a whole when the evaluation succeeds.
	Out string `mapstructure:"out" yaml:"out"`
	// Parallelism bounds the concurrent runs; 0 uses every CPU.
	Parallelism int `mapstructure:"parallelism" yaml:"parallelism"`
	// PaperOverlay draws the ATC'23 published curves beside the heuristics' when true.
	PaperOverlay bool `mapstructure:"paper_overlay" yaml:"paper_overlay"`
	// Paper is the published allocation table (analysis_allo_discrete.csv).
	Paper string `mapstructure:"paper" yaml:"paper"`
	// Baseline is the policy every other one is compared with seed by seed, as listed in
	// Policies; empty means the first policy.
	Baseline string `mapstructure:"baseline" yaml:"baseline"`
	// Timed, when its kind is set, evaluates on timed workloads instead (eval_timed.go).
	Timed TimedEvalConfig `mapstructure:"timed" yaml:"timed"`
}

// SetDefaults evaluates the six heuristics on four openb traces over held-out seeds 49..53
// (42..48 are the pretraining and validation seeds).
func (c *EvalConfig) SetDefaults() {
	c.Policies = []string{"random", "dotprod", "clustering", "packing", "bestfit", "fgd"}
	c.Traces = []string{"default", "gpushare40", "multigpu20", "cpu050"}
	c.TracesDir = "data/openb"
	c.Nodes = "data/openb/openb_node_list_gpu_node.csv"
	c.Seeds = "49-53"
	c.Tune = 1.3
	c.Out = "runs/eval"
	c.PaperOverlay = true
	c.Paper = "data/fgd-paper/analysis_allo_discrete.csv"
	c.Timed.SetDefaults()
}

// Validate checks the shape of every field; whether references resolve is checked by eval
// before it starts.
func (c EvalConfig) Validate() error {
	switch {
	case len(c.Policies) == 0:
		return fmt.Errorf("policies: list at least one policy")
	case len(c.Traces) == 0:
		return fmt.Errorf("traces: list at least one trace")
	case c.Nodes == "":
		return fmt.Errorf("nodes: must name a node list CSV")
	case !(c.Tune > 0 && c.Tune <= 10):
		return fmt.Errorf("tune: must be in (0, 10], got %v", c.Tune)
	case c.Out == "":
		return fmt.Errorf("out: must name a directory")
	case c.Parallelism < 0:
		return fmt.Errorf("parallelism: must be >= 0, got %d", c.Parallelism)
	case c.PaperOverlay && c.Paper == "" && c.Timed.Kind == "":
		return fmt.Errorf("paper: must name the published table when paper_overlay is on")
	}
	if err := c.Timed.Validate(); err != nil {
		return err
	}
	for i, p := range c.Policies {
		if strings.TrimSpace(p) == "" {
			return fmt.Errorf("policies[%d]: empty", i)
		}
	}
	if b := strings.TrimSpace(c.Baseline); b != "" &&
		!slices.ContainsFunc(c.Policies, func(p string) bool { return strings.TrimSpace(p) == b }) {
		return fmt.Errorf("baseline: %q is not one of the policies %v", c.Baseline, c.Policies)
	}
	if _, err := ParseSeeds(c.Seeds); err != nil {
		return fmt.Errorf("seeds: %w", err)
	}
	return nil
}

// maxSeeds keeps a typo like 49-5300000 from queueing millions of runs.
const maxSeeds = 10000

// ParseSeeds reads "49-53", "49,50,51" or a mix ("42,49-51"). Seeds must be distinct.
func ParseSeeds(s string) ([]uint64, error) {
	var seeds []uint64
	seen := map[uint64]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.ParseUint(strings.TrimSpace(lo), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a seed or a range A-B", part)
		}
		b := a
		if isRange {
			if b, err = strconv.ParseUint(strings.TrimSpace(hi), 10, 64); err != nil || b < a {
				return nil, fmt.Errorf("%q is not a range A-B with A <= B", part)
			}
			if b-a >= maxSeeds {
				return nil, fmt.Errorf("%q spans more than %d seeds", part, maxSeeds)
			}
		}
		if uint64(len(seeds))+(b-a) >= maxSeeds {
			return nil, fmt.Errorf("%q lists more than %d seeds", s, maxSeeds)
		}
		// Counted, not compared with b: v <= b holds for ever when b is the largest uint64.
		for n, v := uint64(0), a; n <= b-a; n, v = n+1, v+1 {
			if seen[v] {
				return nil, fmt.Errorf("seed %d is listed twice", v)
			}
			seen[v] = true
			seeds = append(seeds, v)
		}
	}
	return seeds, nil
}
