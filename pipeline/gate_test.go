package pipeline

import (
	"strings"
	"testing"
)

func TestGateDecide(t *testing.T) {
	g := Gate{Metric: "alloc_gpu_pct_130", Margin: 0.5, Workloads: []string{"default", "gpushare40"}, Baselines: []string{"fgd"}}
	scores := Scores{
		"fgd":   {"default": 95.0, "gpushare40": 90.0},
		"champ": {"default": 95.8, "gpushare40": 91.0},
		"new":   {"default": 96.5, "gpushare40": 91.6},
		"close": {"default": 95.5, "gpushare40": 91.6}, // exactly the margin over fgd: not more
		"half":  {"default": 97.0},
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
