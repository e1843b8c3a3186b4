package jobs

import (
	"fmt"
	"sort"
	"strings"
)

// JobState is a job present at a round boundary, as queue policies see it.
type JobState struct {
	Job
	Throughput [NumGPUs]float64 // steps/s alone on each type
	Done       float64          // steps run so far
	Attained   float64          // GPU-seconds received so far (Tiresias' attained service)
	Service    [NumGPUs]float64 // seconds run on each type so far
	LastRan    float64          // end of the last round it ran in, or its arrival
	Ran        bool             // it ran in the previous round
}

// Remaining is the job's steps still to run.
func (j *JobState) Remaining() float64 { return float64(j.Steps) - j.Done }

// Round is the state a policy decides on: the jobs present in arrival order.
type Round struct {
	Now     float64
	Length  float64
	Cluster Cluster
	Jobs    []*JobState
}

// Policy decides which jobs run in a round: prio[i][g] is the priority of r.Jobs[i] on GPU type
// g (higher first; <= 0 never on g). The round then hands GPUs out greedily down the list of
// (job, type) pairs, each job once, skipping pairs whose type lacks the job's GPUs.
type Policy interface {
	Priorities(r *Round, prio [][NumGPUs]float64)
}

type registration struct {
	name string
	new  func() Policy
}

var (
	registry = map[string]registration{}
	aliases  = map[string]string{}
)

// Register adds a policy under its name and aliases (lower case, "_" for "-"); each policy
// file calls it from init, and a package outside jobs may add its own the same way.
func Register(name string, newPolicy func() Policy, alias ...string) {
	registry[name] = registration{name, newPolicy}
	for _, a := range alias {
		aliases[a] = name
	}
}

// NewPolicy is a fresh instance of the policy registered under name or alias, for a round loop
// outside this package (the fungible world orders its queue with it).
func NewPolicy(name string) (Policy, error) {
	n, err := canonical(name)
	if err != nil {
		return nil, err
	}
	return registry[n].new(), nil
}

// Policies lists the registered policy names.
func Policies() []string {
	out := make([]string, 0, len(registry))
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// canonical resolves a name or alias; '-' and '_' are the same letter in names.
func canonical(name string) (string, error) {
	key := strings.ReplaceAll(strings.ToLower(strings.TrimSpace(name)), "-", "_")
	for n := range registry {
		if strings.ReplaceAll(n, "-", "_") == key {
			return n, nil
		}
	}
	if n, ok := aliases[key]; ok {
		return n, nil
	}
	return "", fmt.Errorf("unknown policy %q (known: %s; aliases: %s)", name, strings.Join(Policies(), ", "), strings.Join(aliasNames(), ", "))
}

func aliasNames() []string {
	out := make([]string, 0, len(aliases))
	for a := range aliases {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}

// ranked gives priorities from a total order of the jobs: the first job gets the highest
// priority on every type, its faster types above its slower ones, so each job in turn takes
// the fastest type that still has room for it.
func ranked(r *Round, prio [][NumGPUs]float64, before func(a, b *JobState) bool) {
	order := make([]int, len(r.Jobs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return before(r.Jobs[order[a]], r.Jobs[order[b]]) })
	for rank, i := range order {
		j := r.Jobs[i]
		for g := range GPU(NumGPUs) {
			prio[i][g] = 0
			if j.Throughput[g] <= 0 {
				continue
			}
			faster := 0
			for h := range GPU(NumGPUs) {
				if j.Throughput[h] < j.Throughput[g] {
					faster++
				}
			}
			prio[i][g] = float64((len(order)-rank)*(NumGPUs+1) + faster + 1)
		}
	}
}

// byArrival is the FIFO order: arrival, then trace position.
func byArrival(a, b *JobState) bool {
	if a.Arrival != b.Arrival {
		return a.Arrival < b.Arrival
	}
	return a.Index < b.Index
}

// fastest is the job's best throughput on the cluster's types.
func fastest(j *JobState, c Cluster) float64 {
	best := 0.0
	for g := range GPU(NumGPUs) {
		if c.GPUs[g] >= j.Type.Scale {
			best = max(best, j.Throughput[g])
		}
	}
	return best
}
