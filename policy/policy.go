// Package policy holds schedrl's heuristic experts: placement policies that pick a node and
// GPUs for an arriving task (random, dotprod, clustering, packing, bestfit, fgd — the six
// baselines of the FGD paper, scored as its simulator scores them; and firstfit, the tie order
// alone, a reference for what a consistent node preference is worth), and defragmentation
// (descheduling) policies that move running tasks to reduce fragmentation (frag-one-pod,
// frag-multi-pod, cos-sim, greedy).
//
// Every placer exposes the score it maximises ([Placer.Score]) so that callers can compare
// another agent's choice with the expert's under the expert's own measure. Scores are the
// reference simulator's integer scores (0..100), so many candidates tie; ties between nodes go
// to the node first in the cluster's tie order (sim.Cluster.SetTieOrder: node order unless a
// run sets the seeded order the paper's simulator uses), and within a node the GPU is chosen
// deterministically (best fit, or for FGD the first GPU with the best score). Only random
// draws from the caller's generator.
//
// Adding a policy is one new file that calls registerPlacer or registerDefragger in init.
package policy

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/schedrl/schedrl/sim"
)

// Placer is a placement expert.
type Placer interface {
	sim.Placer
	// Score is the policy's score of a feasible choice (higher is better): Place returns a
	// choice with the highest score.
	Score(c *sim.Cluster, t sim.Task, ch sim.Choice) float64
}

// Move is one task moved by a defragmenter. To.Node is -1 when the task was evicted and could
// not be placed again.
type Move struct {
	Task     string
	From, To sim.Choice
}

// Defragmenter moves running tasks of c (at most budget of them) to reduce fragmentation,
// re-placing evicted tasks with placer where the policy evicts. It applies the moves to c and
// logs them when log is not nil.
type Defragmenter interface {
	Name() string
	Defrag(c *sim.Cluster, placer Placer, budget int, rng *rand.Rand, log *sim.LogWriter) ([]Move, error)
}

var (
	placers    = map[string]func() Placer{}
	defraggers = map[string]func() Defragmenter{}
)

func registerPlacer(name string, f func() Placer)          { placers[name] = f }
func registerDefragger(name string, f func() Defragmenter) { defraggers[name] = f }

func names[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Placers lists the placement policy names.
func Placers() []string { return names(placers) }

// Defragmenters lists the defragmentation policy names.
func Defragmenters() []string { return names(defraggers) }

// NewPlacer returns the named placement policy (case-insensitive).
func NewPlacer(name string) (Placer, error) {
	f, ok := placers[strings.ToLower(name)]
	if !ok {
		return nil, fmt.Errorf("unknown placement policy %q (valid: %s)", name, strings.Join(Placers(), ", "))
	}
	return f(), nil
}

// NewDefragmenter returns the named defragmentation policy (case-insensitive).
func NewDefragmenter(name string) (Defragmenter, error) {
	f, ok := defraggers[strings.ToLower(name)]
	if !ok {
		return nil, fmt.Errorf("unknown defragmentation policy %q (valid: %s)", name, strings.Join(Defragmenters(), ", "))
	}
	return f(), nil
}
