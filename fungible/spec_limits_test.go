package fungible

import (
	"strings"
	"testing"
)

// A generated workload's size and span are bounded before anything is drawn (issue 34,
// classes 1 and 2): the error names the field.
func TestWorkloadSpecLimits(t *testing.T) {
	for spec, want := range map[string]string{
		"jobs=9223372036854775807,lam=1": "field jobs: 9223372036854775807 jobs, at most 200000",
		"jobs=1000000000,lam=1":          "field jobs: 1000000000 jobs, at most",
		"jobs=10,lam=NaN":                "field lam: NaN s, want a finite number > 0",
		"jobs=10,lam=+Inf":               "field lam: +Inf s",
		"jobs=10,lam=1e300":              "field lam: 10 arrivals 1e+300 s apart",
		"jobs=10,lam=-5":                 "field lam: -5 s",
	} {
		if _, err := ParseWorkloadSpec(spec); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want it to contain %q", spec, err, want)
		}
	}
	if _, err := ParseWorkloadSpec("jobs=1000,lam=1800,multigpu"); err != nil {
		t.Errorf("the documented example: %v", err)
	}
}
