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
// GPU to Alloc's; Release (a job finishing or preempted, in a run's log) frees Alloc.Job's.
type Change struct {
	Op    Op
	Alloc Allocation
}

// Op is a change's kind.
type Op string

// The kinds of change.
const (
	Start   Op = "start"
	Resize  Op = "resize"
	Release Op = "release"
)

// Do applies a change to a ledger.
func (l *Ledger) Do(c Change) error {
	switch c.Op {
	case Start:
		return l.Apply(c.Alloc)
	case Resize:
		return l.Resize(c.Alloc.Job, c.Alloc.CPUsPerGPU, c.Alloc.MemPerGPU)
	case Release:
		return l.Release(c.Alloc.Job)
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
// up over and over: the servers of each GPU type, each (job type, count)'s profile and GPU types
// by speed, and (once TUNE needs it) what each server's jobs hold above their type's fair share.
type planner struct {
	l       *Ledger
	m       SpeedModel
	changes []Change
	servers map[string][]int
	types   []string
	fair    map[string][2]float64
	known   map[jobKey]jobInfo
	excess  []room
	cands   []cand
}

type jobKey struct {
	jobType string
	gpus    int
}

type jobInfo struct {
	prof  Profile
	types []string // fastest first
}

func newPlanner(l *Ledger, m SpeedModel) *planner {
	p := &planner{l: l.Clone(), m: m, servers: map[string][]int{}, types: l.Cluster().Types(), known: make(map[jobKey]jobInfo, 32)}
	for i, s := range l.Cluster() {
		p.servers[s.GPUType] = append(p.servers[s.GPUType], i)
	}
	p.fair = map[string][2]float64{}
	for _, t := range p.types {
		fc, fm := l.Cluster().FairShare(t)
		p.fair[t] = [2]float64{fc, fm}
	}
	return p
}

// fairShare is the cluster's FairShare of a GPU type.
func (p *planner) fairShare(gpuType string) (cpus, mem float64) {
	f := p.fair[gpuType]
	return f[0], f[1]
}

func (p *planner) do(c Change) error {
	before, held := p.l.Get(c.Alloc.Job)
	if err := p.l.Do(c); err != nil {
		return err
	}
	if p.excess != nil {
		if held {
			p.addExcess(before, -1)
		}
		after, _ := p.l.Get(c.Alloc.Job)
		p.addExcess(after, 1)
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
		info, err := p.info(j)
		if err != nil {
			return Plan{}, err
		}
		if err := step(j, info.prof, info.types); err != nil {
			return Plan{}, err
		}
	}
	return Plan{Changes: p.changes, Ledger: p.l}, nil
}

// info is j's profile and the cluster's GPU types on which its type has a throughput at its
// requested count, fastest first (ties in GPUTypes order); no profile or no such type is an error
// naming the job type and count.
func (p *planner) info(j Job) (jobInfo, error) {
	key := jobKey{j.Type, j.GPUs}
	if info, ok := p.known[key]; ok {
		return info, nil
	}
	prof, err := p.m.Sens.Profile(j.Type)
	if err != nil {
		return jobInfo{}, fmt.Errorf("job %d: %w", j.ID, err)
	}
	type ts struct {
		t string
		v float64
	}
	out := make([]ts, 0, len(GPUTypes))
	for _, t := range p.types {
		if v, ok := p.m.Tput.Alone(t, j.Type, j.GPUs); ok && v > 0 {
			out = append(out, ts{t, v})
		}
	}
	if len(out) == 0 {
		return jobInfo{}, fmt.Errorf("job %d: no throughput for %q on %d GPUs of any type the cluster has (%s)", j.ID, j.Type, j.GPUs, strings.Join(p.types, ", "))
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].v > out[b].v })
	info := jobInfo{prof: prof, types: make([]string, len(out))}
	for i, x := range out {
		info.types[i] = x.t
	}
	p.known[key] = info
	return info, nil
}
