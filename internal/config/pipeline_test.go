package config

import (
	"strings"
	"testing"
)

func TestPipelineValidate(t *testing.T) {
	tests := []struct {
		name   string
		change func(c *PipelineConfig)
		want   string // "" = valid
	}{
		{"defaults", func(*PipelineConfig) {}, ""},
		{"prefix of the graph", func(c *PipelineConfig) { c.Stages = []string{"logs", "datasets"} }, ""},
		{"unknown stage", func(c *PipelineConfig) { c.Stages = []string{"logs", "dataset"} }, `stages[1]: unknown stage "dataset"`},
		{"out of order", func(c *PipelineConfig) { c.Stages = []string{"datasets", "logs"} }, `stages[1]: "logs" is listed twice or out of order`},
		{"missing input", func(c *PipelineConfig) { c.Stages = []string{"logs", "pretrain"} }, `stages[1]: "pretrain" reads "datasets"`},
		{"empty dir", func(c *PipelineConfig) { c.Dir = " " }, "dir:"},
		{"bad model", func(c *PipelineConfig) { c.Model = "../x" }, "model:"},
		{"negative margin", func(c *PipelineConfig) { c.Gate.Margin = -1 }, "gate.margin: must be >= 0"},
		{"unknown metric", func(c *PipelineConfig) { c.Gate.Metric = "speed" }, `gate.metric: unknown metric "speed"`},
		{"two metrics", func(c *PipelineConfig) { c.Gate.Metrics = []string{"avg_jct_s", "makespan_s"} }, ""},
		{"two metrics, metric their first", func(c *PipelineConfig) {
			c.Gate.Metric, c.Gate.Metrics = "avg_jct_s", []string{"avg_jct_s", "makespan_s"}
		}, ""},
		{"metric and metrics disagree", func(c *PipelineConfig) {
			c.Gate.Metric, c.Gate.Metrics = "p99_jct_s", []string{"avg_jct_s", "makespan_s"}
		}, `gate.metric: "p99_jct_s", and gate.metrics lists [avg_jct_s makespan_s]: set one of them`},
		{"unknown metric in metrics", func(c *PipelineConfig) { c.Gate.Metrics = []string{"avg_jct_s", "jct"} }, `gate.metrics[1]: unknown metric "jct"`},
		{"metric listed twice", func(c *PipelineConfig) { c.Gate.Metrics = []string{"avg_jct_s", "avg_jct_s"} }, `gate.metrics[1]: "avg_jct_s" is listed twice`},
		{"bad log seeds", func(c *PipelineConfig) { c.LogSeeds = "46-42" }, "log_seeds:"},
		{"no workloads", func(c *PipelineConfig) { c.Gate.Workloads = nil }, "gate.workloads:"},
		{"guardrails", func(c *PipelineConfig) { c.Gate.Guardrails = []string{"queue_delay_gpu_mean_s:30", "avg_jct_s:0"} }, ""},
		{"guardrail without tolerance", func(c *PipelineConfig) { c.Gate.Guardrails = []string{"avg_jct_s"} }, `gate.guardrails[0]: "avg_jct_s": want METRIC:TOLERANCE`},
		{"guardrail of an unknown metric", func(c *PipelineConfig) { c.Gate.Guardrails = []string{"avg_jct_s:1", "delay:5"} }, `gate.guardrails[1]: "delay:5": want METRIC:TOLERANCE`},
		{"negative tolerance", func(c *PipelineConfig) { c.Gate.Guardrails = []string{"avg_jct_s:-1"} }, `gate.guardrails[0]: "avg_jct_s:-1": the tolerance must be a number >= 0`},
		{"guardrail twice", func(c *PipelineConfig) { c.Gate.Guardrails = []string{"avg_jct_s:1", "avg_jct_s:2"} }, `gate.guardrails[1]: "avg_jct_s:2": avg_jct_s is listed twice`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var c PipelineConfig
			c.SetDefaults()
			tc.change(&c)
			err := c.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}
