// Package defrag makes fragmented starting states, plans migrations for them (with a
// descheduling heuristic or through the defrag environment) and replays plans in the
// simulator, which both validates them and measures what they achieve.
package defrag

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"

	"github.com/schedrl/schedrl/policy"
	"github.com/schedrl/schedrl/sim"
)

// StateSpec names a starting state: the ATC'23 arrival protocol (trace, tuning ratio, seed)
// under a placement policy, then a random share of the running tasks departs, and the failed
// arrivals are offered again in arrival order; those that still do not fit are the pending
// queue (the first MaxPending of them).
type StateSpec struct {
	Nodes, Pods string
	Policy      string
	Seed        uint64
	Tune        float64
	Coverage    float64
	Departures  float64
	MaxPending  int
}

// streamDepartures is the seeded stream the departures are drawn from.
const streamDepartures uint64 = 10

// MakeState builds the state and its snapshot file.
func MakeState(s StateSpec) (sim.SnapshotFile, error) {
	p, err := sim.Prepare(sim.Experiment{NodesPath: s.Nodes, PodsPath: s.Pods, Tune: s.Tune, Seed: s.Seed, Coverage: s.Coverage})
	if err != nil {
		return sim.SnapshotFile{}, err
	}
	return StateOf(p, s)
}

// StateOf builds the state of s on an already prepared experiment (its nodes and seeded
// workload), so callers can reuse loaded traces or prepare a sub-cluster; p.Seed must be s.Seed.
func StateOf(p *sim.Prepared, s StateSpec) (sim.SnapshotFile, error) {
	if !(s.Departures >= 0 && s.Departures < 1) {
		return sim.SnapshotFile{}, fmt.Errorf("departures: must be in [0, 1), got %v", s.Departures)
	}
	if s.MaxPending < 1 {
		return sim.SnapshotFile{}, fmt.Errorf("max pending: must be >= 1, got %d", s.MaxPending)
	}
	placer, err := policy.NewPlacer(s.Policy)
	if err != nil {
		return sim.SnapshotFile{}, err
	}
	c, _, err := p.Run(placer, nil)
	if err != nil {
		return sim.SnapshotFile{}, err
	}
	running := c.Placements()
	slices.SortFunc(running, func(a, b sim.Placement) int { return cmp.Compare(a.Task.Name, b.Task.Name) })
	rng := sim.RNG(s.Seed, streamDepartures)
	rng.Shuffle(len(running), func(i, j int) { running[i], running[j] = running[j], running[i] })
	gone := map[string]bool{}
	for _, r := range running[:int(s.Departures*float64(len(running)))] {
		if _, err := c.Remove(r.Task.Name); err != nil {
			return sim.SnapshotFile{}, err
		}
		gone[r.Task.Name] = true
	}
	var pending []sim.Task
	prng := sim.RNG(s.Seed, sim.StreamPolicy)
	for _, t := range p.Workload {
		if _, ok := c.Placement(t.Name); ok || gone[t.Name] {
			continue
		}
		if ch, ok := placer.Place(c, t, prng); ok {
			if err := c.Place(t, ch); err != nil {
				return sim.SnapshotFile{}, err
			}
			continue
		}
		if pending = append(pending, t); len(pending) == s.MaxPending {
			break
		}
	}
	meta := map[string]string{"nodes": s.Nodes, "pods": s.Pods, "policy": placer.Name(),
		"seed": strconv.FormatUint(s.Seed, 10), "tune": strconv.FormatFloat(s.Tune, 'g', -1, 64),
		"departures": strconv.FormatFloat(s.Departures, 'g', -1, 64), "max_pending": strconv.Itoa(s.MaxPending),
		"protocol": "fgd-atc23-arrival+departures"}
	return sim.NewSnapshotFile(c, pending, meta), nil
}
