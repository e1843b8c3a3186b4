package defrag

import (
	"slices"
	"strings"
	"testing"

	"github.com/schedrl/schedrl/policy"
)

// One registry holds every planning method: the heuristics of package policy and the random
// agent, looked up by name whatever the case.
func TestPlannersRegistry(t *testing.T) {
	want := append(policy.Defragmenters(), "random")
	slices.Sort(want)
	if got := Methods(); !slices.Equal(got, want) {
		t.Fatalf("Methods() = %v, want %v", got, want)
	}
	for _, name := range []string{"Random", "GREEDY"} {
		p, err := NewPlanner(name)
		if err != nil || !strings.EqualFold(p.Name(), name) {
			t.Errorf("NewPlanner(%q) = %v, %v", name, p, err)
		}
	}
	if _, err := NewPlanner("nope"); err == nil || !strings.Contains(err.Error(), "random") {
		t.Errorf("unknown method: %v, want the valid names listed", err)
	}
}
