package pipeline

import (
	"fmt"
	"strings"

	"github.com/schedrl/schedrl/eval"
)

// Gate is the champion gate: a candidate takes the alias only when, on every configured
// workload and for every one of its metrics, it beats each baseline and the current champion
// by more than Margin: exceeds them, or for a LowerIsBetter measure (a JCT, a makespan, a
// queueing delay) falls below them. With Paired the margin must hold at the low end of the 95%
// interval of the seed-by-seed gain, so a win that is only the noise of a few workloads is
// refused. Guardrails are measures the candidate need not win on but must not lose on by
// more than their tolerance against any baseline (with Paired, at the high end of the 95%
// interval of the seed-by-seed loss).
type Gate struct {
	Metrics    []Measure
	Margin     float64
	Paired     bool
	Workloads  []string
	Baselines  []string
	Guardrails []Guardrail
}

// Guardrail is a measure the candidate may lose on by at most Tolerance (in its unit).
type Guardrail struct {
	Measure
	Tolerance float64
}

// Measure is one metric the gate compares and which way is better.
type Measure struct {
	Name          string
	LowerIsBetter bool
}

// Scores holds one metric per policy and workload, seed by seed: Scores[policy][workload][i]
// is the run on the evaluation's i-th seed, the same seeds for every policy.
type Scores map[string]map[string][]float64

// Comparison is one candidate-versus-opponent check of a gate decision.
type Comparison struct {
	Metric    string  `json:"metric"`
	Workload  string  `json:"workload"`
	Against   string  `json:"against"`
	Candidate float64 `json:"candidate"` // mean over seeds
	Other     float64 `json:"other"`
	// GainLow is the low end of the 95% interval of the candidate's gain per seed (Paired
	// only): candidate − other, or other − candidate when lower is better.
	GainLow *float64 `json:"gain_ci95_low,omitempty"`
	// Tolerance is a guardrail's: the candidate passes unless it loses by more than this.
	Tolerance *float64 `json:"guardrail_tolerance,omitempty"`
	Pass      bool     `json:"pass"`
}

// Decision is the gate's verdict with the reason recorded in the run record and registry.
type Decision struct {
	Promote     bool         `json:"promote"`
	Reason      string       `json:"reason"`
	Comparisons []Comparison `json:"comparisons"`
}

// Decide compares candidate against the baselines and, when champion is not empty, the current
// champion, on scores[metric] for each of the gate's metrics. A score missing for any policy on
// a configured workload refuses promotion (it cannot be shown to win), naming what is missing.
func (g Gate) Decide(scores map[string]Scores, candidate, champion string) Decision {
	opponents := append([]string{}, g.Baselines...)
	if champion != "" {
		opponents = append(opponents, champion)
	}
	var d Decision
	var missing, lost []string
	// pairs compares the candidate's scores of metric with each opponent's on every workload,
	// recording each comparison and naming what is missing; it returns those that did not pass.
	pairs := func(metric string, opponents []string, judge func(c, v []float64) Comparison) (failed []string) {
		for _, w := range g.Workloads {
			c, ok := scores[metric][candidate][w]
			if !ok || len(c) == 0 {
				missing = append(missing, fmt.Sprintf("%s of %s on %s", metric, candidate, w))
				continue
			}
			for _, o := range opponents {
				v, ok := scores[metric][o][w]
				if !ok || len(v) == 0 || (g.Paired && len(v) != len(c)) {
					missing = append(missing, fmt.Sprintf("%s of %s on %s", metric, o, w))
					continue
				}
				cmp := judge(c, v)
				cmp.Metric, cmp.Workload, cmp.Against = metric, w, o
				d.Comparisons = append(d.Comparisons, cmp)
				if !cmp.Pass {
					failed = append(failed, cmp.describe())
				}
			}
		}
		return failed
	}
	for _, m := range g.Metrics {
		lost = append(lost, pairs(m.Name, opponents, func(c, v []float64) Comparison { return g.compare(m, c, v) })...)
	}
	var breached []string
	for _, gr := range g.Guardrails {
		breached = append(breached, pairs(gr.Name, g.Baselines, func(c, v []float64) Comparison { return g.guard(gr, c, v) })...)
	}
	switch {
	case len(missing) > 0:
		d.Reason = "no score: " + strings.Join(missing, ", ")
	case len(lost) > 0:
		d.Reason = fmt.Sprintf("does not beat by more than %g%s: %s", g.Margin, g.how(), strings.Join(lost, "; "))
	case len(breached) > 0:
		d.Reason = fmt.Sprintf("breaks a guardrail%s: %s", g.how(), strings.Join(breached, "; "))
	default:
		d.Promote = true
		against := strings.Join(opponents, ", ")
		if champion == "" {
			against += " (no current champion)"
		}
		d.Reason = fmt.Sprintf("beats %s by more than %g%s on %s on %s", against, g.Margin, g.how(), g.metricNames(), strings.Join(g.Workloads, ", "))
		if len(g.Guardrails) > 0 {
			d.Reason += "; guardrails kept: " + g.guardrailNames()
		}
	}
	return d
}

func (g Gate) compare(m Measure, c, v []float64) Comparison {
	cmp := Comparison{Candidate: eval.Summarize(c).Mean, Other: eval.Summarize(v).Mean}
	better, worse := c, v // the gain is better − worse, seed by seed
	if m.LowerIsBetter {
		better, worse = v, c
	}
	if !g.Paired {
		cmp.Pass = eval.Summarize(better).Mean > eval.Summarize(worse).Mean+g.Margin
		return cmp
	}
	d := eval.PairSeeds("", better, worse).Diff
	// One seed has no interval: it cannot show a win.
	cmp.GainLow, cmp.Pass = &d.Low, d.N > 1 && d.Low > g.Margin
	return cmp
}

// guard checks a guardrail: the candidate's gain (as compare's) must not fall below
// −Tolerance, at the low end of its paired 95% interval with Paired.
func (g Gate) guard(gr Guardrail, c, v []float64) Comparison {
	cmp := Gate{Paired: g.Paired}.compare(gr.Measure, c, v)
	tol := gr.Tolerance
	cmp.Tolerance = &tol
	if !g.Paired {
		gain := cmp.Candidate - cmp.Other
		if gr.LowerIsBetter {
			gain = -gain
		}
		cmp.Pass = gain >= -tol
		return cmp
	}
	cmp.Pass = len(c) > 1 && *cmp.GainLow >= -tol
	return cmp
}

func (g Gate) guardrailNames() string {
	names := make([]string, len(g.Guardrails))
	for i, gr := range g.Guardrails {
		names[i] = fmt.Sprintf("%s within %g", gr.Name, gr.Tolerance)
	}
	return strings.Join(names, ", ")
}

// metricNames lists the gate's metrics for its reason: "avg_jct_s (lower is better) and
// makespan_s (lower is better)".
func (g Gate) metricNames() string {
	names := make([]string, len(g.Metrics))
	for i, m := range g.Metrics {
		names[i] = m.Name
		if m.LowerIsBetter {
			names[i] += " (lower is better)"
		}
	}
	return strings.Join(names, " and ")
}

func (g Gate) how() string {
	if g.Paired {
		return " (95% paired, seed by seed)"
	}
	return ""
}

func (c Comparison) describe() string {
	s := fmt.Sprintf("%s %.3f vs %s %.3f on %s", c.Metric, c.Candidate, c.Against, c.Other, c.Workload)
	if c.GainLow != nil {
		s += fmt.Sprintf(" (the gain's 95%% interval starts at %+.3f)", *c.GainLow)
	}
	if c.Tolerance != nil {
		s += fmt.Sprintf(" (tolerance %g)", *c.Tolerance)
	}
	return s
}
