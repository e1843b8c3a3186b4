package config

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// PipelineConfig configures `schedrl pipeline run`: where the stage cache and run records
// live, which stages run, what the publish stage publishes and when it promotes.
type PipelineConfig struct {
	// Dir holds the stage cache (one directory per stage and key) and the run records.
	Dir string `mapstructure:"dir" yaml:"dir"`
	// Stages to run, a subset of PipelineStages in that order; every input of a listed stage
	// must be listed too.
	Stages []string `mapstructure:"stages" yaml:"stages"`
	// LogSeeds are the expert runs the logs stage simulates (sim section: cluster, pod list,
	// policy, tune), one decision log each, unless datasets.logs names existing logs.
	LogSeeds string `mapstructure:"log_seeds" yaml:"log_seeds"`
	// Logs.Source, when set, is a folder or store prefix (s3://BUCKET/PREFIX) of decision logs
	// (*.jsonl: a cluster's, from `serve extender --log-dir` or `logs import`) the logs stage
	// takes instead of simulating.
	Logs PipelineLogsConfig `mapstructure:"logs" yaml:"logs"`
	// Model is the registry model name the publish stage publishes under.
	Model string `mapstructure:"model" yaml:"model"`
	// Gate decides whether a published version becomes the champion.
	Gate GateConfig `mapstructure:"gate" yaml:"gate"`
	// Executor says where sharded work runs: here, or as Kubernetes Jobs (executor.go).
	Executor ExecutorConfig `mapstructure:"executor" yaml:"executor"`
}

// PipelineLogsConfig says where the logs stage takes its decision logs from.
type PipelineLogsConfig struct {
	Source string `mapstructure:"source" yaml:"source"`
}

// GateConfig is the champion gate: a new version takes Alias only when, on every workload in
// Workloads and for each of its metrics (Names), it beats each Baselines policy and the current
// Alias holder by more than Margin (above them, or below them for a lower-is-better metric:
// GateMetrics says which).
type GateConfig struct {
	Alias string `mapstructure:"alias" yaml:"alias"`
	// Metric is the eval metric compared, one of GateMetrics: alloc_gpu_pct_130 for the
	// arrival protocol, avg_jct_s or a queueing delay for a timed evaluation.
	Metric string `mapstructure:"metric" yaml:"metric"`
	// Metrics, when listed, are compared instead of Metric, each of them on every workload:
	// [avg_jct_s, makespan_s] promotes only a candidate that wins on both. Metric must then be
	// left at its default or be the list's first.
	Metrics []string `mapstructure:"metrics" yaml:"metrics"`
	// Margin in the metric's unit (points of allocation for alloc_gpu_pct_*); >= 0.
	Margin float64 `mapstructure:"margin" yaml:"margin"`
	// Paired asks for the margin at the low end of the 95% interval of the seed-by-seed
	// difference instead of between the means: a win must be more than a few workloads' noise.
	Paired bool `mapstructure:"paired" yaml:"paired"`
	// Workloads are eval workload names the candidate must win on: trace names (default,
	// gpushare40, ...) or a timed evaluation's workload names.
	Workloads []string `mapstructure:"workloads" yaml:"workloads"`
	// Baselines are heuristic policies in the same eval that the candidate must beat.
	Baselines []string `mapstructure:"baselines" yaml:"baselines"`
	// Guardrails are METRIC:TOLERANCE entries ("queue_delay_gpu_mean_s:60"): measures the
	// candidate need not win on but must not be worse on than any baseline by more than
	// TOLERANCE (in the metric's unit; with Paired, at the high end of the 95% interval).
	Guardrails []string `mapstructure:"guardrails" yaml:"guardrails"`
}

// Guardrail is one parsed gate.guardrails entry.
type Guardrail struct {
	Metric    GateMetric
	Tolerance float64
}

// GuardrailsOf parses gate.guardrails; errors name the entry.
func (g GateConfig) GuardrailsOf() ([]Guardrail, error) {
	var out []Guardrail
	for i, s := range g.Guardrails {
		name, tol, ok := strings.Cut(strings.TrimSpace(s), ":")
		m, known := GateMetricOf(name)
		t, err := strconv.ParseFloat(tol, 64)
		switch {
		case !ok || !known:
			return nil, fmt.Errorf("gate.guardrails[%d]: %q: want METRIC:TOLERANCE with a metric of %v", i, s, gateMetricNames())
		case err != nil || !(t >= 0) || math.IsInf(t, 0):
			return nil, fmt.Errorf("gate.guardrails[%d]: %q: the tolerance must be a number >= 0", i, s)
		case slices.ContainsFunc(out, func(o Guardrail) bool { return o.Metric.Name == name }):
			return nil, fmt.Errorf("gate.guardrails[%d]: %q: %s is listed twice", i, s, name)
		}
		out = append(out, Guardrail{Metric: m, Tolerance: t})
	}
	return out, nil
}

// PipelineStages is the full stage graph in execution order (PipelineInputs gives its edges).
var PipelineStages = []string{"logs", "datasets", "pretrain", "finetune", "eval", "publish"}

// A GateMetric is an eval measure the gate can compare: the report that has it and which
// way is better.
type GateMetric struct {
	Name          string
	Timed         bool // a timed evaluation's (eval.timed.kind set), else the arrival protocol's
	LowerIsBetter bool
}

// GateMetrics are the measures the gate can compare: the arrival protocol's allocations, and
// a timed world's JCTs, makespan, allocation and queueing delays (per seed in metrics.json).
var GateMetrics = []GateMetric{
	{Name: "alloc_gpu_pct_100"},
	{Name: "alloc_gpu_pct_130"},
	{Name: "avg_jct_s", Timed: true, LowerIsBetter: true},
	{Name: "p99_jct_s", Timed: true, LowerIsBetter: true},
	{Name: "makespan_s", Timed: true, LowerIsBetter: true},
	{Name: "alloc_gpu_mean_pct", Timed: true},
	{Name: "queue_delay_gpu_mean_s", Timed: true, LowerIsBetter: true},
	{Name: "queue_delay_whole-gpu_mean_s", Timed: true, LowerIsBetter: true},
	{Name: "frag_ratio_mean_pct", Timed: true, LowerIsBetter: true}, // the drr kind's
}

// GateMetricOf looks a gate metric up by name.
func GateMetricOf(name string) (GateMetric, bool) {
	i := slices.IndexFunc(GateMetrics, func(m GateMetric) bool { return m.Name == name })
	if i < 0 {
		return GateMetric{}, false
	}
	return GateMetrics[i], true
}

func gateMetricNames() []string {
	names := make([]string, len(GateMetrics))
	for i, m := range GateMetrics {
		names[i] = m.Name
	}
	return names
}

// defaultGateMetric is gate.metric's default.
const defaultGateMetric = "alloc_gpu_pct_130"

// Names are the metrics the gate compares: Metrics when listed, else Metric.
func (g GateConfig) Names() []string {
	if len(g.Metrics) > 0 {
		return g.Metrics
	}
	return []string{g.Metric}
}

var modelName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$`)

// SetDefaults runs every stage under runs/pipeline and gates on the default trace against FGD.
func (c *PipelineConfig) SetDefaults() {
	c.Dir = "runs/pipeline"
	c.Stages = slices.Clone(PipelineStages)
	c.LogSeeds = "42-46"
	c.Model = "placement"
	c.Gate = GateConfig{
		Alias:      "champion",
		Metric:     defaultGateMetric,
		Metrics:    []string{},
		Margin:     0,
		Workloads:  []string{"default"},
		Baselines:  []string{"fgd"},
		Guardrails: []string{},
	}
	c.Executor.SetDefaults()
}

// Validate checks the stage list, the model name and the gate.
func (c PipelineConfig) Validate() error {
	if strings.TrimSpace(c.Dir) == "" {
		return fmt.Errorf("dir: must name a directory")
	}
	if len(c.Stages) == 0 {
		return fmt.Errorf("stages: list at least one of %v", PipelineStages)
	}
	last := -1
	for i, s := range c.Stages {
		at := slices.Index(PipelineStages, s)
		switch {
		case at < 0:
			return fmt.Errorf("stages[%d]: unknown stage %q (want some of %v, in that order)", i, s, PipelineStages)
		case at <= last:
			return fmt.Errorf("stages[%d]: %q is listed twice or out of order (order: %v)", i, s, PipelineStages)
		}
		last = at
	}
	for i, s := range c.Stages {
		for _, in := range PipelineInputs(s) {
			if !slices.Contains(c.Stages, in) {
				return fmt.Errorf("stages[%d]: %q reads %q, which is not listed", i, s, in)
			}
		}
	}
	if _, err := ParseSeeds(c.LogSeeds); err != nil {
		return fmt.Errorf("log_seeds: %w", err)
	}
	if !modelName.MatchString(c.Model) {
		return fmt.Errorf("model: %q is not a model name (letters, digits, '.', '_', '-'; at most 100)", c.Model)
	}
	if err := c.Executor.Validate(); err != nil {
		return err
	}
	return c.Gate.validate()
}

func (g GateConfig) validate() error {
	switch {
	case !modelName.MatchString(g.Alias):
		return fmt.Errorf("gate.alias: %q is not an alias name", g.Alias)
	case !slices.Contains(gateMetricNames(), g.Metric):
		return fmt.Errorf("gate.metric: unknown metric %q (want one of %v)", g.Metric, gateMetricNames())
	case len(g.Metrics) > 0 && g.Metric != defaultGateMetric && g.Metric != g.Metrics[0]:
		return fmt.Errorf("gate.metric: %q, and gate.metrics lists %v: set one of them", g.Metric, g.Metrics)
	case !(g.Margin >= 0):
		return fmt.Errorf("gate.margin: must be >= 0, got %v", g.Margin)
	case len(g.Workloads) == 0:
		return fmt.Errorf("gate.workloads: list at least one eval workload")
	}
	for i, m := range g.Metrics {
		switch {
		case !slices.Contains(gateMetricNames(), m):
			return fmt.Errorf("gate.metrics[%d]: unknown metric %q (want one of %v)", i, m, gateMetricNames())
		case slices.Index(g.Metrics, m) < i:
			return fmt.Errorf("gate.metrics[%d]: %q is listed twice", i, m)
		}
	}
	for i, w := range g.Workloads {
		if strings.TrimSpace(w) == "" {
			return fmt.Errorf("gate.workloads[%d]: empty", i)
		}
	}
	for i, b := range g.Baselines {
		if strings.TrimSpace(b) == "" {
			return fmt.Errorf("gate.baselines[%d]: empty", i)
		}
	}
	_, err := g.GuardrailsOf()
	return err
}

// PipelineInputs names the stages whose outputs stage reads.
func PipelineInputs(stage string) []string {
	switch stage {
	case "datasets":
		return []string{"logs"}
	case "pretrain":
		return []string{"datasets"}
	case "finetune":
		return []string{"pretrain"}
	case "eval":
		return []string{"pretrain", "finetune"}
	case "publish":
		return []string{"finetune", "eval"}
	}
	return nil
}
