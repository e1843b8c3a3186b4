package fungible

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/schedrl/schedrl/jobs"
)

// roundPolicies are the round policies known by name (Gavel's LPs); learned ones are built by
// their callers.
var roundPolicies = map[string]func() RoundPolicy{}

// registerPolicy adds a round policy under its name; each policy's file registers itself.
func registerPolicy(name string, newPolicy func() RoundPolicy) { roundPolicies[name] = newPolicy }

// NewRoundPolicy is a fresh instance of the round policy registered under name.
func NewRoundPolicy(name string) (RoundPolicy, error) {
	f, ok := roundPolicies[name]
	if !ok {
		return nil, fmt.Errorf("unknown round policy %q (have %s)", name, strings.Join(RoundPolicyNames(), ", "))
	}
	return f(), nil
}

// RoundPolicyNames lists the registered round policies, sorted.
func RoundPolicyNames() []string {
	out := make([]string, 0, len(roundPolicies))
	for n := range roundPolicies {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// combo is a candidate of a planner's hand-out: job a of the round alone (b < 0), or a and b
// sharing the same GPUs, on GPU type g. rank orders candidates, highest first, compared entry by
// entry.
type combo struct {
	a, b int
	g    jobs.GPU
	rank [3]float64
}

// handOut is jobs' hand-out (runRounds) on servers: down the candidates by rank (ties: first job,
// second job, GPU type), each job once, a candidate starts when the servers of its type hold its
// requested GPUs at the type's fair share of CPUs and memory; a pair holds one fair share per GPU
// between them, split evenly, as gandiva splits it. A candidate that does not fit is skipped, so
// its jobs may still start through a later one.
func handOut(l *Ledger, m SpeedModel, present []Job, cs []combo) (Plan, error) {
	slices.SortStableFunc(cs, func(x, y combo) int {
		for k := range x.rank {
			if c := cmp.Compare(y.rank[k], x.rank[k]); c != 0 {
				return c
			}
		}
		return cmp.Or(cmp.Compare(x.a, y.a), cmp.Compare(x.b, y.b), cmp.Compare(x.g, y.g))
	})
	p := newPlanner(l, m)
	placed := make([]bool, len(present))
	for _, c := range cs {
		if placed[c.a] || c.b >= 0 && placed[c.b] {
			continue
		}
		t, j := GPUTypes[c.g], present[c.a]
		fc, fm := p.fairShare(t)
		parts, ok := p.place(t, j.GPUs, fc, fm, nil)
		if !ok {
			continue
		}
		if c.b < 0 {
			if err := p.do(Change{Start, alloc(j, t, parts, fc, fm, NoPartner)}); err != nil {
				return Plan{}, err
			}
			placed[c.a] = true
			continue
		}
		keepC, giveC := split(fc)
		keepM, giveM := split(fm)
		if err := p.do(Change{Start, alloc(j, t, parts, keepC, keepM, NoPartner)}); err != nil {
			return Plan{}, err
		}
		if err := p.do(Change{Start, alloc(present[c.b], t, parts, giveC, giveM, j.ID)}); err != nil {
			return Plan{}, err
		}
		placed[c.a], placed[c.b] = true, true
	}
	return Plan{Changes: p.changes, Ledger: p.l}, nil
}
