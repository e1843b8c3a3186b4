package fungible

import (
	"fmt"
	"sort"
	"strings"
)

// Job is what the rules need of a DL job: its identity, Gavel job type, requested GPU count (its
// scale factor) and, for a generated workload, its total steps and arrival time in seconds.
type Job struct {
	ID      int
	Type    string
	GPUs    int
	Steps   int64
	Arrival float64
}

// Change is one step of a plan: Start applies Alloc; Resize sets a held job's CPUs and memory per
// GPU to Alloc's.
type Change struct {
	Op    Op
	Alloc Allocation
}

// Op is a change's kind.
type Op string

// The kinds of change.
const (
	Start  Op = "start"
	Resize Op = "resize"
)

// Do applies a change to a ledger.
func (l *Ledger) Do(c Change) error {
	switch c.Op {
	case Start:
		return l.Apply(c.Alloc)
	case Resize:
		return l.Resize(c.Alloc.Job, c.Alloc.CPUsPerGPU, c.Alloc.MemPerGPU)
	}
	return fmt.Errorf("unknown change %q", c.Op)
}

// Plan is a rule's decision: the changes in the order they apply, and the ledger after them. The
// ledger a rule was given is left as it was.
type Plan struct {
	Changes []Change
	Ledger  *Ledger
}

// Rule allocates the jobs of queue, in the queue's order (FIFO, LAS, SRTF: the caller's policy),
// on top of the allocations l holds. A job already held keeps its allocation; a job that gets
// nothing waits. Errors are bad inputs (a job type without a throughput or a Synergy mapping).
type Rule func(l *Ledger, m SpeedModel, queue []Job) (Plan, error)

var rules = map[string]Rule{}

// register adds a rule under its name; each rule's file registers itself.
func register(name string, r Rule) { rules[name] = r }

// LookupRule is the rule registered under name.
func LookupRule(name string) (Rule, error) {
	r, ok := rules[name]
	if !ok {
		return nil, fmt.Errorf("unknown allocation rule %q (have %s)", name, strings.Join(RuleNames(), ", "))
	}
	return r, nil
}

// RuleNames lists the registered rules, sorted.
func RuleNames() []string {
	out := make([]string, 0, len(rules))
	for n := range rules {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// planner carries a rule's working copy of the ledger, the changes made to it, and what it looks
// up over and over: the servers of each GPU type and each (job type, count)'s GPU types by speed.
type planner struct {
	l       *Ledger
	m       SpeedModel
	changes []Change
	servers map[string][]int
	order   map[orderKey][]string
}

type orderKey struct {
	jobType string
	gpus    int
}

func newPlanner(l *Ledger, m SpeedModel) *planner {
	p := &planner{l: l.Clone(), m: m, servers: map[string][]int{}, order: map[orderKey][]string{}}
	for i, s := range l.Cluster() {
		p.servers[s.GPUType] = append(p.servers[s.GPUType], i)
	}
	return p
}

func (p *planner) do(c Change) error {
	if err := p.l.Do(c); err != nil {
		return err
	}
	p.changes = append(p.changes, c)
	return nil
}

// each runs step for every job of queue the ledger does not hold yet, given the job's profile and
// its GPU types by speed at its requested count; a job type without either is a bad input.
func (p *planner) each(queue []Job, step func(j Job, prof Profile, types []string) error) (Plan, error) {
	for _, j := range queue {
		if _, held := p.l.Get(j.ID); held {
			continue
		}
		prof, err := p.m.Sens.Profile(j.Type)
		if err != nil {
			return Plan{}, fmt.Errorf("job %d: %w", j.ID, err)
		}
		types, err := p.typesBySpeed(j, j.GPUs)
		if err != nil {
			return Plan{}, err
		}
		if err := step(j, prof, types); err != nil {
			return Plan{}, err
		}
	}
	return Plan{Changes: p.changes, Ledger: p.l}, nil
}

// typesBySpeed lists the cluster's GPU types on which jobType has a throughput at gpus GPUs,
// fastest first (ties in GPUTypes order); none is an error naming the job type and count.
func (p *planner) typesBySpeed(j Job, gpus int) ([]string, error) {
	if names, ok := p.order[orderKey{j.Type, gpus}]; ok {
		return names, nil
	}
	type ts struct {
		t string
		v float64
	}
	var out []ts
	for _, t := range p.l.Cluster().Types() {
		if v, ok := p.m.Tput.Alone(t, j.Type, gpus); ok && v > 0 {
			out = append(out, ts{t, v})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("job %d: no throughput for %q on %d GPUs of any type the cluster has (%s)", j.ID, j.Type, gpus, strings.Join(p.l.Cluster().Types(), ", "))
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].v > out[b].v })
	names := make([]string, len(out))
	for i, x := range out {
		names[i] = x.t
	}
	p.order[orderKey{j.Type, gpus}] = names
	return names, nil
}
