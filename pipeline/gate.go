package pipeline

import (
	"fmt"
	"strings"
)

// Gate is the champion gate: a candidate takes the alias only when, on every configured
// workload, its metric (higher is better) exceeds each baseline's and the current champion's
// by more than Margin.
type Gate struct {
	Metric    string
	Margin    float64
	Workloads []string
	Baselines []string
}

// Scores holds one metric per policy and workload: Scores[policy][workload].
type Scores map[string]map[string]float64

// Comparison is one candidate-versus-opponent check of a gate decision.
type Comparison struct {
	Workload  string  `json:"workload"`
	Against   string  `json:"against"`
	Candidate float64 `json:"candidate"`
	Other     float64 `json:"other"`
	Pass      bool    `json:"pass"`
}

// Decision is the gate's verdict with the reason recorded in the run record and registry.
type Decision struct {
	Promote     bool         `json:"promote"`
	Reason      string       `json:"reason"`
	Comparisons []Comparison `json:"comparisons"`
}

// Decide compares candidate against the baselines and, when champion is not empty, the current
// champion. A score missing for any policy on a configured workload refuses promotion (it
// cannot be shown to win), naming what is missing.
func (g Gate) Decide(scores Scores, candidate, champion string) Decision {
	opponents := append([]string{}, g.Baselines...)
	if champion != "" {
		opponents = append(opponents, champion)
	}
	var d Decision
	var missing, lost []string
	for _, w := range g.Workloads {
		c, ok := scores[candidate][w]
		if !ok {
			missing = append(missing, fmt.Sprintf("%s on %s", candidate, w))
			continue
		}
		for _, o := range opponents {
			v, ok := scores[o][w]
			if !ok {
				missing = append(missing, fmt.Sprintf("%s on %s", o, w))
				continue
			}
			cmp := Comparison{Workload: w, Against: o, Candidate: c, Other: v, Pass: c > v+g.Margin}
			d.Comparisons = append(d.Comparisons, cmp)
			if !cmp.Pass {
				lost = append(lost, fmt.Sprintf("%s %.3f vs %s %.3f on %s", g.Metric, c, o, v, w))
			}
		}
	}
	switch {
	case len(missing) > 0:
		d.Reason = "no " + g.Metric + " for " + strings.Join(missing, ", ")
	case len(lost) > 0:
		d.Reason = fmt.Sprintf("does not beat by more than %g: %s", g.Margin, strings.Join(lost, "; "))
	default:
		d.Promote = true
		against := strings.Join(opponents, ", ")
		if champion == "" {
			against += " (no current champion)"
		}
		d.Reason = fmt.Sprintf("beats %s by more than %g %s on %s", against, g.Margin, g.Metric, strings.Join(g.Workloads, ", "))
	}
	return d
}
