package pipeline

import (
	"strings"
	"testing"
)

func TestGateDecide(t *testing.T) {
	g := Gate{Metric: "alloc_gpu_pct_130", Margin: 0.5, Workloads: []string{"default", "gpushare40"}, Baselines: []string{"fgd"}}
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
		{"missing workload", "half", "", false, "no alloc_gpu_pct_130 for half on gpushare40"},
		{"missing champion scores", "new", "ghost", false, "ghost on default, ghost on gpushare40"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := g.Decide(scores, tc.candidate, tc.champion)
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
		{"different seeds", "short", true, false, "no alloc_gpu_pct_130 for fgd on default"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := Gate{Metric: "alloc_gpu_pct_130", Paired: tc.paired, Workloads: []string{"default"}, Baselines: []string{"fgd"}}
			d := g.Decide(scores, tc.candidate, "")
			if d.Promote != tc.promote || !strings.Contains(d.Reason, tc.reason) {
				t.Errorf("promote=%v reason=%q, want %v containing %q", d.Promote, d.Reason, tc.promote, tc.reason)
			}
		})
	}
	one := Scores{"fgd": {"default": {95.0}}, "one": {"default": {96.0}}}
	g := Gate{Metric: "alloc_gpu_pct_130", Paired: true, Workloads: []string{"default"}, Baselines: []string{"fgd"}}
	if d := g.Decide(one, "one", ""); d.Promote || d.Comparisons[0].GainLow == nil {
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
	g := Gate{Metric: "avg_jct_s", LowerIsBetter: true, Paired: true, Workloads: []string{"gen"}, Baselines: []string{"srtf"}}
	if d := g.Decide(scores, "faster", ""); !d.Promote || !strings.Contains(d.Reason, "avg_jct_s (lower is better)") {
		t.Errorf("faster: %+v", d)
	} else if low := *d.Comparisons[0].GainLow; !(low > 0 && low < 6) {
		t.Errorf("faster: gain interval starts at %v, want in (0, 6)", low)
	}
	if d := g.Decide(scores, "slower", ""); d.Promote {
		t.Errorf("slower promoted: %+v", d)
	}
	g.Paired = false
	if d := g.Decide(scores, "slower", ""); d.Promote {
		t.Errorf("slower promoted by the mean gate: %+v", d)
	}
}
