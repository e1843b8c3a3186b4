// Package env holds schedrl's reinforcement-learning environments over the simulator: the
// observation encoding, action masks and rewards. The same code encodes observations for
// datasets, PPO rollouts and inference, so the three can never drift apart; the feature-spec
// version in Spec names the layout, and checkpoints refuse a mismatch.
//
// Observations are entity based: a row of features per node, one vector for the task being
// decided and one for the cluster, plus a mask over the stage's candidates. Every feature is
// normalised to about [0, 1] by cluster-relative constants, so one network serves clusters of
// any size. Environments with two decisions per step (defrag: pick a running task, then its
// target) expose them as stages of the same interface.
package env

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/schedrl/schedrl/sim"
)

// Spec describes an environment's observation layout.
type Spec struct {
	Env     string   `json:"env"`
	Version string   `json:"feature_spec"`
	Stages  int      `json:"stages"` // decisions per step (placement 1, defrag 2)
	Node    []string `json:"node_features"`
	Task    []string `json:"task_features"`
	Global  []string `json:"global_features"`
}

// Observation is one decision point. Buffers are reused by Observe, so copy what you keep.
type Observation struct {
	Stage    int
	NumNodes int
	Nodes    []float32 // NumNodes x len(Spec.Node), row-major
	Task     []float32
	Global   []float32
	// Mask marks feasible candidates of this stage; in placement candidate i is node i.
	Mask []bool
	// TiePref is each candidate's place in the scheduler's tie-break order, 1 for the most
	// preferred down to 1/n (placement; empty where there is none). It is not a row feature,
	// so identical nodes keep identical rows, which nn merges.
	TiePref []float32
}

// Action picks a candidate of the current stage. For a GPU task GPUs may name the exact GPUs
// (replaying a log); the empty set lets the environment choose them, as the expert would.
type Action struct {
	Candidate int
	GPUs      sim.GPUSet
}

// Result is what a step did.
type Result struct {
	Reward float64
	Done   bool       // the episode ended with this step
	Choice sim.Choice // where the task went
	// FragDelta is the change in the cluster's fragment (milli-GPU) the step caused.
	FragDelta float64
}

// Env is an environment at a decision point.
type Env interface {
	Spec() Spec
	// Observe encodes the current decision point into obs, reusing its buffers.
	Observe(obs *Observation)
	// Step applies the action; an infeasible or out-of-range action is an error and changes nothing.
	Step(a Action) (Result, error)
	// Done reports whether no decision is pending.
	Done() bool
}

// grow returns buf resized to n, reusing its storage.
func grow[T any](buf []T, n int) []T {
	if cap(buf) < n {
		return make([]T, n)
	}
	return buf[:n]
}

// specs are the environments' observation layouts by name: each environment registers its own
// (registerSpec) beside its definition.
var specs = map[string]Spec{}

// registerSpec adds s under its environment's name and returns it; a second spec of the same
// name is a programming error.
func registerSpec(s Spec) Spec {
	if _, dup := specs[s.Env]; dup {
		panic("env: spec of " + s.Env + " registered twice")
	}
	specs[s.Env] = s
	return s
}

// SpecOf returns the observation layout of a named environment.
func SpecOf(name string) (Spec, error) {
	s, ok := specs[name]
	if !ok {
		return Spec{}, fmt.Errorf("unknown environment %q (have %s)", name, strings.Join(slices.Sorted(maps.Keys(specs)), ", "))
	}
	return s, nil
}
