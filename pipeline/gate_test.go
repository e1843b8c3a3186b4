package pipeline

import (
	"strings"
	"testing"
)

var alloc = []Measure{{Name: "alloc_gpu_pct_130"}}

func TestGateDecide(t *testing.T) {
	g := Gate{Metrics: alloc, Margin: 0.5, Workloads: []string{"default", "gpushare40"}, Baselines: []string{"fgd"}}
	scores := Scores{
		"fgd":   {"default": {95.0}, "gpushare40": {90.0}},
		"champ": {"default": {95.8}, "gpushare40": {91.0}},
		"new":   {"default": {96.5}, "gpushare40": {91.6}},
		"close": {"default": {95.5}, "gpushare40": {91.6}}, // exactly the margin over fgd: not more
		"half":  {"default": {97.0}},
	}
	tests := []struct {
		name, candidate, champion string
		promote                   bool
		reason                    string
	}{
		{"beats fgd and champion", "new", "champ", true, "beats fgd, champ by more than 0.5"},
		{"first champion", "champ", "", true, "(no current champion)"},
		{"margin is strict", "close", "", false, "alloc_gpu_pct_130 95.500 vs fgd 95.000 on default"},
		{"loses to the champion", "champ", "new", false, "vs new 96.500 on default"},
		{"missing workload", "half", "", false, "no score: alloc_gpu_pct_130 of half on gpushare40"},
		{"missing champion scores", "new", "ghost", false, "alloc_gpu_pct_130 of ghost on default, alloc_gpu_pct_130 of ghost on gpushare40"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := g.Decide(map[string]Scores{g.Metrics[0].Name: scores}, tc.candidate, tc.champion)
			if d.Promote != tc.promote || !strings.Contains(d.Reason, tc.reason) {
				t.Errorf("promote=%v reason=%q, want %v containing %q", d.Promote, d.Reason, tc.promote, tc.reason)
			}
		})
	}
}

// The paired gate promotes a steady small gain over varied workloads and refuses a larger mean
// gain that one workload carries, which the mean gate would promote.
func TestGatePaired(t *testing.T) {
	fgd := []float64{95.0, 93.0, 96.0, 94.0, 95.5}
	scores := Scores{
		"fgd":    {"default": fgd},
		"steady": {"default": {95.1, 93.1, 96.1, 94.1, 95.6}}, // +0.1 on every seed
		"lucky":  {"default": {96.5, 92.9, 95.9, 93.9, 95.4}}, // +1.5 once, -0.1 elsewhere
		"short":  {"default": {95.1, 93.1}},                   // not the same seeds
		"one":    {"default": {96.0}},
	}
	tests := []struct {
		name, candidate string
		paired, promote bool
		reason          string
	}{
		{"steady gain, paired", "steady", true, true, "(95% paired, seed by seed)"},
		{"one lucky workload, mean gate", "lucky", false, true, "beats fgd"},
		{"one lucky workload, paired", "lucky", true, false, "the gain's 95% interval starts at -"},
		{"different seeds", "short", true, false, "no score: alloc_gpu_pct_130 of fgd on default"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := Gate{Metrics: alloc, Paired: tc.paired, Workloads: []string{"default"}, Baselines: []string{"fgd"}}
			d := g.Decide(map[string]Scores{g.Metrics[0].Name: scores}, tc.candidate, "")
			if d.Promote != tc.promote || !strings.Contains(d.Reason, tc.reason) {
				t.Errorf("promote=%v reason=%q, want %v containing %q", d.Promote, d.Reason, tc.promote, tc.reason)
			}
		})
	}
	one := Scores{"fgd": {"default": {95.0}}, "one": {"default": {96.0}}}
	g := Gate{Metrics: alloc, Paired: true, Workloads: []string{"default"}, Baselines: []string{"fgd"}}
	if d := g.Decide(map[string]Scores{"alloc_gpu_pct_130": one}, "one", ""); d.Promote || d.Comparisons[0].GainLow == nil {
		t.Errorf("one seed promoted by the paired gate: %+v", d)
	}
}

// A lower-is-better metric (a JCT) promotes the candidate below the baseline on every seed and
// refuses one above it; the paired gain is the baseline minus the candidate.
func TestGateLowerIsBetter(t *testing.T) {
	scores := Scores{
		"srtf":   {"gen": {50, 60, 55, 70}},
		"faster": {"gen": {45, 54, 50, 64}},
		"slower": {"gen": {52, 63, 57, 73}},
	}
	g := Gate{Metrics: []Measure{{"avg_jct_s", true}}, Paired: true, Workloads: []string{"gen"}, Baselines: []string{"srtf"}}
	if d := g.Decide(map[string]Scores{g.Metrics[0].Name: scores}, "faster", ""); !d.Promote || !strings.Contains(d.Reason, "avg_jct_s (lower is better)") {
		t.Errorf("faster: %+v", d)
	} else if low := *d.Comparisons[0].GainLow; !(low > 0 && low < 6) {
		t.Errorf("faster: gain interval starts at %v, want in (0, 6)", low)
	}
	if d := g.Decide(map[string]Scores{g.Metrics[0].Name: scores}, "slower", ""); d.Promote {
		t.Errorf("slower promoted: %+v", d)
	}
	g.Paired = false
	if d := g.Decide(map[string]Scores{g.Metrics[0].Name: scores}, "slower", ""); d.Promote {
		t.Errorf("slower promoted by the mean gate: %+v", d)
	}
}

// A gate on two metrics promotes only a candidate that wins on both, and names the metric it
// loses on: lower avg JCT with a longer makespan is refused.
func TestGateTwoMetrics(t *testing.T) {
	g := Gate{Metrics: []Measure{{"avg_jct_s", true}, {"makespan_s", true}}, Paired: true, Workloads: []string{"gen"}, Baselines: []string{"srtf"}}
	scores := map[string]Scores{
		"avg_jct_s": {
			"srtf": {"gen": {50, 60, 55, 70}},
			"both": {"gen": {45, 54, 50, 64}},
			"jct":  {"gen": {45, 54, 50, 64}},
		},
		"makespan_s": {
			"srtf": {"gen": {500, 600, 550, 700}},
			"both": {"gen": {490, 590, 540, 690}},
			"jct":  {"gen": {510, 610, 560, 710}},
		},
	}
	d := g.Decide(scores, "both", "")
	if !d.Promote || len(d.Comparisons) != 2 || !strings.Contains(d.Reason, "avg_jct_s (lower is better) and makespan_s (lower is better)") {
		t.Errorf("both: %+v", d)
	}
	d = g.Decide(scores, "jct", "")
	if d.Promote || !strings.Contains(d.Reason, "makespan_s 597.500 vs srtf 587.500 on gen") || strings.Contains(d.Reason, "avg_jct_s 53") {
		t.Errorf("jct: %+v", d)
	}
	if d.Comparisons[0].Metric != "avg_jct_s" || !d.Comparisons[0].Pass || d.Comparisons[1].Metric != "makespan_s" || d.Comparisons[1].Pass {
		t.Errorf("jct comparisons: %+v", d.Comparisons)
	}
	delete(scores["makespan_s"], "both")
	if d := g.Decide(scores, "both", ""); d.Promote || !strings.Contains(d.Reason, "no score: makespan_s of both on gen") {
		t.Errorf("missing makespan: %+v", d)
	}
}

// A guardrail lets the candidate lose on a measure by at most its tolerance against each
// baseline: paired, at the high end of the 95% interval of the seed-by-seed loss.
func TestGateGuardrails(t *testing.T) {
	frag := Measure{Name: "frag_ratio_mean_pct", LowerIsBetter: true}
	delay := Measure{Name: "queue_delay_gpu_mean_s", LowerIsBetter: true}
	g := Gate{Metrics: []Measure{frag}, Paired: true, Workloads: []string{"default"}, Baselines: []string{"fgd"},
		Guardrails: []Guardrail{{Measure: delay, Tolerance: 10}}}
	scores := map[string]Scores{
		frag.Name: {"fgd": {"default": {30, 31, 32, 33}}, "new": {"default": {20, 21, 22, 23}}},
		delay.Name: {"fgd": {"default": {100, 110, 120, 130}},
			"new": {"default": {104, 115, 123, 136}}}, // 4.5 s worse on average, steadily: within 10
	}
	d := g.Decide(scores, "new", "")
	if !d.Promote || !strings.Contains(d.Reason, "guardrails kept: queue_delay_gpu_mean_s within 10") {
		t.Fatalf("within tolerance: %+v", d)
	}
	scores[delay.Name]["new"]["default"] = []float64{125, 130, 150, 160} // 26 s worse
	d = g.Decide(scores, "new", "")
	if d.Promote || !strings.Contains(d.Reason, "breaks a guardrail") || !strings.Contains(d.Reason, "tolerance 10") {
		t.Fatalf("beyond tolerance: %+v", d)
	}
	delete(scores[delay.Name], "fgd")
	if d = g.Decide(scores, "new", ""); d.Promote || !strings.Contains(d.Reason, "no score: queue_delay_gpu_mean_s of fgd on default") {
		t.Fatalf("missing guardrail scores: %+v", d)
	}
}
