package fungible

import (
	"strings"
	"testing"
)

func TestParseWorkloadSpec(t *testing.T) {
	got, err := ParseWorkloadSpec("jobs=300,lam=1200,multigpu")
	if err != nil || got != (WorkloadConfig{Jobs: 300, Interarrival: 1200, MultiGPU: true}) {
		t.Fatalf("ParseWorkloadSpec = %+v, %v", got, err)
	}
	for spec, want := range map[string]string{
		"jobs=0,lam=10":           "want jobs=N (N > 0)",
		"jobs=5":                  "want jobs=N (N > 0) and lam=S",
		"jobs=5,lam=x":            "field lam",
		"jobs=5,lam=1,rate=2":     `unknown field "rate"`,
		"jobs=5,lam=1,multigpu=1": "field multigpu: takes no value",
	} {
		if _, err := ParseWorkloadSpec(spec); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseWorkloadSpec(%q) = %v, want an error with %q", spec, err, want)
		}
	}
}

func TestAsTraceAndBack(t *testing.T) {
	tr := AsTrace([]Job{{ID: 0, Type: "a", GPUs: 2, Steps: 7, Arrival: 0}, {ID: 1, Type: "b", GPUs: 1, Steps: 9, Arrival: 5}}, "generate:x")
	if tr.Path != "generate:x" || len(tr.Jobs) != 2 || tr.Jobs[1].Index != 1 || tr.Jobs[1].Steps != 9 ||
		tr.Jobs[0].Type.Scale != 2 || tr.Jobs[1].Arrival != 5 || tr.Jobs[0].PriorityWeight != 1 {
		t.Errorf("AsTrace = %+v", tr)
	}
	if back := FromTrace(tr); len(back) != 2 || back[0] != (Job{ID: 0, Type: "a", GPUs: 2, Steps: 7, Arrival: 0}) || back[1].ID != 1 {
		t.Errorf("FromTrace(AsTrace(x)) = %+v", back)
	}
}
