package eval

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/fungible"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/jobs"
)

func init() { registerTimedKind(FungibleKind, fungibleKind{}) }

// FungibleKind is the fungible world's eval.timed.kind.
const FungibleKind = "fungible"

// fungibleKind is the fungible world (package fungible): the DL jobs of a Gavel trace or a
// generated mix as whole allocations (GPUs, CPUs, memory) on servers of timed.servers_gpus GPUs.
// A policy is a rule with its job order, RULE/ORDER (synergy-tune/srtf; the order defaults to
// fifo), one of jobs' queue policies, which holds fixed demands in its own order, one of Gavel's
// LPs (max_min_fairness, _perf, _packed: round policies over fixed demands), or a multi-agent
// checkpoint or registry reference (Options.Learned), with "#graph-free" for its decoder
// without the coordination graph.
type fungibleKind struct{}

func (fungibleKind) gavelTables() {}

// FungibleFactory makes one run's round policy (each run its own: a learned policy keeps a
// network's buffers and counts its decisions).
type FungibleFactory func() (fungible.RoundPolicy, error)

// FungibleResolver turns a multi-agent checkpoint or registry reference and its decoder
// ("", "ordered" or "graph-free") into a factory of round policies over the world's cluster and
// speed model, or an error naming the reference; the command layer provides it (eval links no
// network).
type FungibleResolver func(ref PolicyRef, decode string, c fungible.Cluster, m fungible.SpeedModel) (FungibleFactory, error)

// fungiblePolicy is a rule in its order, or a round policy (an LP or a network) with the order
// that sorts the queue it is handed (none for an LP).
type fungiblePolicy struct {
	rule, order string
	round       FungibleFactory
}

type fungibleWorld struct {
	cfg        config.TimedEvalConfig
	cluster    fungible.Cluster
	serverGPUs int
	model      fungible.SpeedModel
	policies   []fungiblePolicy
	names      []string
	work       [][][]fungible.Job // [workload][seed], read-only
	seeds      []bool             // [workload]: generated per seed
}

func (fungibleKind) prepare(cfg config.EvalConfig, seeds []uint64, opts Options) (timedWorld, error) {
	t := cfg.Timed
	w := &fungibleWorld{cfg: t, serverGPUs: fungible.ServerGPUs}
	if s := strings.TrimSpace(t.ServersGPUs); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("timed.servers_gpus: %q: the fungible world takes one server size in GPUs, e.g. 8", t.ServersGPUs)
		}
		w.serverGPUs = n
	}
	world, err := fungible.LoadWorld(timedWorldSpec(t, w.serverGPUs), "timed.")
	if err != nil {
		return nil, err
	}
	w.cluster, w.model = world.Cluster, world.Model
	table := world.Table
	learned := map[int]PolicyRef{}
	decodes := map[int]string{}
	for i, p := range cfg.Policies {
		if ref, decode, ok, err := learnedFungible(p); ok || err != nil {
			if err != nil {
				return nil, fmt.Errorf("policies[%d]: %w", i, err)
			}
			learned[i], decodes[i] = ref, decode
			w.policies = append(w.policies, fungiblePolicy{order: "fifo"})
			continue
		}
		fp, err := parseFungiblePolicy(p)
		if err != nil {
			return nil, fmt.Errorf("policies[%d]: %w", i, err)
		}
		w.policies = append(w.policies, fp)
	}
	names, traces, seededBy, err := gavelWorkloads(cfg, seeds, table)
	if err != nil {
		return nil, err
	}
	w.names, w.seeds = names, seededBy
	for _, perSeed := range traces {
		work := make([][]fungible.Job, len(perSeed))
		for s, tr := range perSeed {
			work[s] = fungible.FromTrace(tr)
		}
		w.work = append(w.work, work)
	}
	// Last, since resolving may load networks or pull from the registry.
	resolve := learnedResolver[FungibleResolver](opts.Learned, FungibleKind)
	for _, i := range slices.Sorted(maps.Keys(learned)) {
		ref := learned[i]
		if resolve == nil {
			return nil, fmt.Errorf("policies[%d]: %q: multi-agent checkpoints need a resolver that loads networks (schedrl eval provides one)", i, ref.Raw)
		}
		if w.policies[i].round, err = resolve(ref, decodes[i], w.cluster, w.model); err != nil {
			return nil, fmt.Errorf("policies[%d]: %w", i, err)
		}
	}
	return w, nil
}

// learnedFungible reads a multi-agent reference, ckpt:DIR or MODEL@ALIAS, with an optional
// "#DECODER"; ok is false for a baseline's name.
func learnedFungible(s string) (ref PolicyRef, decode string, ok bool, err error) {
	raw, decode, _ := strings.Cut(strings.TrimSpace(s), "#")
	if ref, err = ParsePolicyRef(raw); err != nil {
		return ref, "", true, err
	}
	if ref.Kind != Checkpoint && ref.Kind != Registry {
		if decode != "" {
			return ref, "", true, fmt.Errorf("%q: #%s sets a multi-agent checkpoint's decoder; %s is a baseline", s, decode, raw)
		}
		return ref, "", false, nil
	}
	if ref.Kind == Checkpoint {
		if err := fileExists(fmt.Sprintf("policy %q: checkpoint", s), ref.Dir); err != nil {
			return ref, "", true, err
		}
	}
	return ref, decode, true, nil
}

func (fungibleKind) workloadName(raw, _ string) (string, error) { return gavelWorkloadName(raw), nil }

// parseFungiblePolicy reads RULE[/ORDER], one of Gavel's LPs, or a queue policy of jobs (the
// fixed-demand rule in that order).
func parseFungiblePolicy(s string) (fungiblePolicy, error) {
	name, order, hasOrder := strings.Cut(strings.TrimSpace(s), "/")
	if _, err := fungible.LookupRule(name); err == nil {
		p := fungiblePolicy{rule: name, order: cmp.Or(order, "fifo")}
		if _, err := jobs.NewPolicy(p.order); err != nil {
			return p, fmt.Errorf("%q: order: %w", s, err)
		}
		return p, nil
	}
	if hasOrder {
		return fungiblePolicy{}, fmt.Errorf("%q: unknown allocation rule %q (have %s)", s, name, strings.Join(fungible.RuleNames(), ", "))
	}
	if lp := strings.ReplaceAll(strings.ToLower(name), "-", "_"); slices.Contains(fungible.RoundPolicyNames(), lp) || strings.HasPrefix(lp, "max_min_fairness") {
		if _, err := fungible.NewRoundPolicy(lp); err != nil {
			return fungiblePolicy{}, fmt.Errorf("%q: %w", s, err)
		}
		return fungiblePolicy{round: func() (fungible.RoundPolicy, error) { return fungible.NewRoundPolicy(lp) }}, nil
	}
	if _, err := jobs.NewPolicy(name); err != nil {
		return fungiblePolicy{}, fmt.Errorf("%q: neither an allocation rule (%s, as RULE/ORDER) nor a queue policy: %w", s, strings.Join(fungible.RuleNames(), ", "), err)
	}
	return fungiblePolicy{rule: "fixed", order: name}, nil
}

func (w *fungibleWorld) workloads() []string { return w.names }

func (w *fungibleWorld) seeded(workload int) bool { return w.seeds[workload] }

func (w *fungibleWorld) describe() string {
	return fmt.Sprintf("%s V100:P100:K80 GPUs in %d-GPU servers, rounds of %g s", w.cfg.Cluster, w.serverGPUs, w.cfg.Round)
}

// run measures every job. The series follows the run's log: a point at every change to the
// cluster and at every arrival, GPUs counted once when two jobs share them; a job waits from
// its arrival to its finish whenever it holds nothing.
func (w *fungibleWorld) run(policy, workload, seed int) (TimedSeedRun, error) {
	rc, err := w.policies[policy].runConfig()
	if err != nil {
		return TimedSeedRun{}, err
	}
	rc.Round, rc.Log = w.cfg.Round, true
	work := w.work[workload][seed]
	res, err := fungible.Run(w.cluster, w.model, work, rc)
	if err != nil {
		return TimedSeedRun{}, err
	}
	run := TimedSeedRun{Makespan: res.Makespan, Utilization: res.Utilization, Rounds: res.Rounds, JCT: res.JCT}
	if mp, ok := rc.Policy.(*env.MAIFSPolicy); ok {
		stats := mp.Stats
		run.MAIFS = &stats
	}
	run.Series = fungibleSeries(w.cluster, work, res)
	first := work[0].Arrival
	run.AllocGPUMeanPct = timeMean(run.Series, first, res.Makespan, 0, func(p TimedPoint) float64 { return p.AllocGPUPct })
	run.QueueLenMean = timeMean(run.Series, first, res.Makespan, 0, func(p TimedPoint) float64 { return float64(p.Waiting) })
	run.fillJCT()
	return run, nil
}

// runConfig is one run's decision: a fresh round policy, or the rule in its order.
func (p fungiblePolicy) runConfig() (fungible.RunConfig, error) {
	var rc fungible.RunConfig
	var err error
	if p.order != "" {
		if rc.Order, err = jobs.NewPolicy(p.order); err != nil {
			return rc, err
		}
	}
	if p.round != nil {
		rc.Policy, err = p.round()
		return rc, err
	}
	rc.Rule, err = fungible.LookupRule(p.rule)
	return rc, err
}

func fungibleSeries(c fungible.Cluster, work []fungible.Job, res fungible.Result) []TimedPoint {
	total := 0
	for _, s := range c {
		total += s.GPUs
	}
	finish := make([]float64, len(work))
	var times []float64
	for i, j := range work {
		finish[i] = j.Arrival + res.JCT[i]
		times = append(times, j.Arrival)
	}
	slices.Sort(finish)
	for _, e := range res.Log {
		times = append(times, e.Time)
	}
	slices.Sort(times)
	times = slices.Compact(times)
	held := map[int]fungible.Allocation{}
	var out []TimedPoint
	next, arrived := 0, 0
	for _, t := range times {
		for ; next < len(res.Log) && res.Log[next].Time <= t; next++ {
			e := res.Log[next]
			switch e.Op {
			case fungible.Start:
				held[e.Alloc.Job] = e.Alloc
			case fungible.Release:
				delete(held, e.Alloc.Job)
			}
		}
		for arrived < len(work) && work[arrived].Arrival <= t {
			arrived++
		}
		gpus := map[[2]int]bool{}
		for _, a := range held {
			for _, part := range a.Parts {
				for _, g := range part.GPUs {
					gpus[[2]int{part.Server, g}] = true
				}
			}
		}
		present := arrived - sort.Search(len(finish), func(i int) bool { return finish[i] > t })
		out = append(out, TimedPoint{Time: t, AllocGPUPct: 100 * float64(len(gpus)) / float64(total),
			Running: len(held), Waiting: max(0, present-len(held))})
	}
	return out
}
