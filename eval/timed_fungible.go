package eval

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/schedrl/schedrl/fungible"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/jobs"
)

func init() { registerTimedKind("fungible", fungibleKind{}) }

// fungibleKind is the fungible world (package fungible): the DL jobs of a Gavel trace or a
// generated mix as whole allocations (GPUs, CPUs, memory) on servers of timed.servers_gpus GPUs.
// A policy is a rule with its job order, RULE/ORDER (synergy-tune/srtf; the order defaults to
// fifo), or one of jobs' queue policies, which holds fixed demands in its own order.
type fungibleKind struct{}

type fungiblePolicy struct{ rule, order string }

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

func (fungibleKind) prepare(cfg config.EvalConfig, seeds []uint64, _ Options) (timedWorld, error) {
	t := cfg.Timed
	w := &fungibleWorld{cfg: t, serverGPUs: fungible.ServerGPUs}
	if s := strings.TrimSpace(t.ServersGPUs); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("timed.servers_gpus: %q: the fungible world takes one server size in GPUs, e.g. 8", t.ServersGPUs)
		}
		w.serverGPUs = n
	}
	var err error
	if w.cluster, err = fungible.NewMixCluster(t.Cluster, w.serverGPUs); err != nil {
		return nil, fmt.Errorf("timed.cluster: %w", err)
	}
	table, err := jobs.LoadThroughputs(t.Throughputs)
	if err != nil {
		return nil, fmt.Errorf("timed.throughputs: %w", err)
	}
	if w.model, err = speedModelOf(t, table); err != nil {
		return nil, err
	}
	for i, p := range cfg.Policies {
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
	return w, nil
}

func (fungibleKind) workloadName(raw, _ string) (string, error) { return gavelWorkloadName(raw), nil }

// parseFungiblePolicy reads RULE[/ORDER] or a queue policy of jobs (the fixed-demand rule in
// that order).
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
	if strings.HasPrefix(strings.ReplaceAll(strings.ToLower(name), "-", "_"), "max_min_fairness") {
		return fungiblePolicy{}, fmt.Errorf("%q is Gavel's LP over GPU types: evaluate it with timed.kind jobs; the fungible world has rules %s", s, strings.Join(fungible.RuleNames(), ", "))
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
	p := w.policies[policy]
	rule, err := fungible.LookupRule(p.rule)
	if err != nil {
		return TimedSeedRun{}, err
	}
	order, err := jobs.NewPolicy(p.order)
	if err != nil {
		return TimedSeedRun{}, err
	}
	work := w.work[workload][seed]
	res, err := fungible.Run(w.cluster, w.model, work, fungible.RunConfig{Rule: rule, Order: order, Round: w.cfg.Round, Log: true})
	if err != nil {
		return TimedSeedRun{}, err
	}
	run := TimedSeedRun{Makespan: res.Makespan, Utilization: res.Utilization, Rounds: res.Rounds, JCT: res.JCT}
	run.Series = fungibleSeries(w.cluster, work, res)
	first := work[0].Arrival
	run.AllocGPUMeanPct = timeMean(run.Series, first, res.Makespan, 0, func(p TimedPoint) float64 { return p.AllocGPUPct })
	run.QueueLenMean = timeMean(run.Series, first, res.Makespan, 0, func(p TimedPoint) float64 { return float64(p.Waiting) })
	run.fillJCT()
	return run, nil
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
