package eval

import (
	"fmt"

	"github.com/schedrl/schedrl/policy"
	"github.com/schedrl/schedrl/sim"
)

// Heuristics resolves package policy's placement names; checkpoints and registry references
// are refused, naming what resolves them, so a caller without libtorch gets a clear error.
func Heuristics(ref PolicyRef) (PolicyFactory, error) {
	switch ref.Kind {
	case Checkpoint:
		return nil, fmt.Errorf("policy %q: checkpoints need a resolver that loads networks (schedrl eval provides one)", ref.Raw)
	case Registry:
		return nil, fmt.Errorf("policy %q: registry references need a resolver that pulls from the registry (schedrl eval provides one)", ref.Raw)
	}
	if _, err := policy.NewPlacer(ref.Name); err != nil {
		return nil, fmt.Errorf("policy %q: %w", ref.Raw, err)
	}
	return func() (sim.Placer, error) { return policy.NewPlacer(ref.Name) }, nil
}
