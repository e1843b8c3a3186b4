package fungible

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"gonum.org/v1/gonum/stat"

	"github.com/schedrl/schedrl/jobs"
)

// RunConfig is one simulation of the fungible world.
type RunConfig struct {
	Rule  Rule        // allocates each round's queue
	Order jobs.Policy // orders each round's queue: any of jobs' policies (fifo, srtf, tiresias-las, ...)
	// Policy, when set, allocates each round instead of Rule from every present job's state
	// (Gavel's LPs, learned policies; Order, when set, still sorts RoundState.Queue). Rule, or
	// Fixed when nil, still checks before the first round that every job fits the empty cluster.
	Policy RoundPolicy
	Round  float64 // round length in seconds; 0 means 360, as in jobs
	Log    bool    // keep every change to the cluster in Result.Log
}

// Event is one change to the cluster at a time: a round's plan (Start, Resize) at its boundary,
// a Release when a job finishes or at the next boundary.
type Event struct {
	Time float64
	Change
}

// Result is what a run measured over all its jobs.
type Result struct {
	JCT         []float64 // per job, in the workload's order (s)
	AvgJCT      float64
	P95JCT      float64 // empirical 95th percentile
	Makespan    float64 // time (s) at which the last job finished
	Utilization float64 // GPU-time held over GPU-time, from 0 to the makespan
	Rounds      int
	Log         []Event
}

// running is a job of a run: what the order policy sees of it, and its place in the workload.
type running struct {
	job   Job
	state *jobs.JobState
	pos   int
}

// Run simulates work (in arrival order) on c in rounds, jobs' model with whole allocations: at each
// boundary every job present is released (preemption), the order policy ranks them, and the rule
// allocates them in that order on an empty ledger, so each round's allocations are checked against
// capacity from scratch; each held job runs the round at its allocation's speed (SpeedModel), and a
// job whose partner finishes inside the round runs on alone for the rest of it. A job finishing
// inside a round frees its allocation until the next boundary.
func Run(c Cluster, m SpeedModel, work []Job, cfg RunConfig) (Result, error) {
	if cfg.Round == 0 {
		cfg.Round = 360
	}
	if !(cfg.Round > 0) || math.IsInf(cfg.Round, 0) {
		return Result{}, fmt.Errorf("round %g s, want > 0", cfg.Round)
	}
	if len(work) == 0 {
		return Result{}, fmt.Errorf("no jobs")
	}
	jc, err := orderCluster(c)
	if err != nil {
		return Result{}, err
	}
	check := cfg.Rule
	if check == nil && cfg.Policy != nil {
		check = Fixed
	}
	if err := checkWork(c, m, work, check); err != nil {
		return Result{}, err
	}
	if err := jobs.RoundBudget(cfg.Round, runTimes(m, work)); err != nil {
		return Result{}, err
	}
	res := Result{JCT: make([]float64, len(work))}
	now, next, left := work[0].Arrival, 0, len(work)
	var present []*running
	var held []*running
	var prev *Ledger // the last round's allocations
	busy := 0.0
	for left > 0 {
		for next < len(work) && work[next].Arrival <= now {
			j := work[next]
			st := &jobs.JobState{Job: jobs.Job{Index: next, Type: jobs.JobType{Model: j.Type, Scale: j.GPUs}, Steps: j.Steps, Arrival: j.Arrival, PriorityWeight: 1}, LastRan: j.Arrival}
			for g, t := range GPUTypes {
				st.Throughput[g], _ = m.Tput.Alone(t, j.Type, j.GPUs)
			}
			present = append(present, &running{job: j, state: st, pos: next})
			next++
		}
		for _, r := range held {
			res.log(cfg.Log, now, release(r.job.ID))
		}
		if len(present) == 0 {
			now = work[next].Arrival
			held = held[:0]
			continue
		}
		plan, err := cfg.plan(NewLedger(c), m, present, prev, jc, now)
		if err != nil {
			return Result{}, err
		}
		for _, ch := range plan.Changes {
			res.log(cfg.Log, now, ch)
		}
		held = held[:0]
		prev = plan.Ledger
		byID := make(map[int]*running, len(present))
		for _, r := range present {
			byID[r.job.ID] = r
			_, r.state.Ran = plan.Ledger.Get(r.job.ID)
			if r.state.Ran {
				held = append(held, r)
			}
		}
		var releases []Event
		steps := make([]progress, len(held))
		for i, r := range held {
			a, _ := plan.Ledger.Get(r.job.ID)
			var pa *Allocation
			prest := 0.0
			if a.Partner != NoPartner {
				p, _ := plan.Ledger.Get(a.Partner)
				pa, prest = &p, byID[a.Partner].state.Remaining()
			}
			if steps[i], err = advance(m, a, pa, r.state.Remaining(), prest, cfg.Round); err != nil {
				return Result{}, err
			}
		}
		for i, r := range held {
			a, _ := plan.Ledger.Get(r.job.ID)
			p, g := steps[i], float64(a.GPUCount())
			r.state.Service[slices.Index(GPUTypes, a.GPUType)] += p.run
			r.state.Attained += p.run * g
			r.state.LastRan = now + p.run
			busy += p.share * g
			r.state.Done += p.steps
			if p.finished {
				r.state.Done = float64(r.job.Steps)
				finish := now + p.run
				res.JCT[r.pos] = finish - r.job.Arrival
				res.Makespan = max(res.Makespan, finish)
				releases = append(releases, Event{finish, release(r.job.ID)})
				left--
			}
		}
		if len(held) == 0 && next == len(work) {
			return Result{}, fmt.Errorf("round at %g s: the rule allocated none of the %d waiting jobs", now, len(present))
		}
		sort.SliceStable(releases, func(a, b int) bool { return releases[a].Time < releases[b].Time })
		for _, e := range releases {
			res.log(cfg.Log, e.Time, e.Change)
		}
		held = slices.DeleteFunc(held, func(r *running) bool { return r.state.Done >= float64(r.job.Steps) })
		present = slices.DeleteFunc(present, func(r *running) bool { return r.state.Done >= float64(r.job.Steps) })
		res.Rounds++
		now += cfg.Round
	}
	total := 0
	for _, s := range c {
		total += s.GPUs
	}
	res.Utilization = busy / float64(total) / res.Makespan
	res.AvgJCT = stat.Mean(res.JCT, nil)
	sorted := slices.Clone(res.JCT)
	slices.Sort(sorted)
	res.P95JCT = stat.Quantile(0.95, stat.Empirical, sorted, nil)
	return res, nil
}

// roundState is the boundary's view for a RoundPolicy: present jobs oldest first, with their
// allocations in the round before (prev, nil before the first round).
func roundState(now, length float64, jc jobs.Cluster, present []*running, prev *Ledger, queue []Job) RoundState {
	s := RoundState{Now: now, Present: make([]JobStatus, len(present)), Queue: queue,
		Round: &jobs.Round{Now: now, Length: length, Cluster: jc, Jobs: make([]*jobs.JobState, len(present))}}
	for i, r := range present {
		s.Round.Jobs[i] = r.state
		st := JobStatus{Job: r.job, Done: r.state.Done, Attained: r.state.Attained, Waited: now - r.state.LastRan}
		if prev != nil {
			st.Prev, st.Held = prev.Get(r.job.ID)
		}
		s.Present[i] = st
	}
	return s
}

func release(job int) Change {
	return Change{Op: Release, Alloc: Allocation{Job: job, Partner: NoPartner}}
}

func (r *Result) log(keep bool, t float64, c Change) {
	if keep {
		r.Log = append(r.Log, Event{t, c})
	}
}

// progress is one job's round: how long it ran, its GPU-seconds held per GPU (1 alone, 1/2 per
// job while sharing), the steps it ran and whether it finished.
type progress struct {
	run, share, steps float64
	finished          bool
}

// advance runs the job holding a, with rest steps left, for up to length seconds; with a partner
// (pa, with prest steps left) at the paired speeds until either finishes, then alone.
func advance(m SpeedModel, a Allocation, pa *Allocation, rest, prest, length float64) (progress, error) {
	alone, err := m.Speed(a, nil)
	if err != nil {
		return progress{}, err
	}
	solo := func(p progress, t float64) progress {
		if rest-p.steps <= alone*t {
			d := (rest - p.steps) / alone
			return progress{p.run + d, p.share + d, rest, true}
		}
		return progress{p.run + t, p.share + t, p.steps + alone*t, false}
	}
	if pa == nil {
		return solo(progress{}, length), nil
	}
	self, err := m.Speed(a, pa)
	if err != nil {
		return progress{}, err
	}
	other, err := m.Speed(*pa, &a)
	if err != nil {
		return progress{}, err
	}
	tSelf, tOther := rest/self, prest/other
	together := min(tSelf, tOther, length)
	if tSelf <= together {
		return progress{tSelf, tSelf / 2, rest, true}, nil
	}
	p := progress{together, together / 2, self * together, false}
	if together == length {
		return p, nil
	}
	return solo(p, length-together), nil
}

// plan is the round's decision: the policy's from every present job's state, or the rule's over
// the queue in the order's order.
func (cfg RunConfig) plan(l *Ledger, m SpeedModel, present []*running, prev *Ledger, jc jobs.Cluster, now float64) (Plan, error) {
	var queue []Job
	if cfg.Order != nil {
		queue = ordered(present, cfg.Order, jc, now, cfg.Round)
	}
	if cfg.Policy != nil {
		return cfg.Policy.Plan(l, m, roundState(now, cfg.Round, jc, present, prev, queue))
	}
	return cfg.Rule(l, m, queue)
}

// ordered is the round's queue: the present jobs by their best priority over GPU types under the
// order policy (highest first, ties in arrival order), without those it gives no type.
func ordered(present []*running, order jobs.Policy, c jobs.Cluster, now, length float64) []Job {
	r := &jobs.Round{Now: now, Length: length, Cluster: c, Jobs: make([]*jobs.JobState, len(present))}
	for i, p := range present {
		r.Jobs[i] = p.state
	}
	prio := make([][jobs.NumGPUs]float64, len(present))
	order.Priorities(r, prio)
	key := make([]float64, len(present))
	idx := make([]int, 0, len(present))
	for i := range present {
		key[i] = slices.Max(prio[i][:])
		if key[i] > 0 {
			idx = append(idx, i)
		}
	}
	sort.SliceStable(idx, func(a, b int) bool { return key[idx[a]] > key[idx[b]] })
	queue := make([]Job, len(idx))
	for k, i := range idx {
		queue[k] = present[i].job
	}
	return queue
}

// orderCluster is c as the order policies see a cluster: GPUs per type, the largest server's size.
func orderCluster(c Cluster) (jobs.Cluster, error) {
	var jc jobs.Cluster
	for _, s := range c {
		g, ok := gpuOf(s.GPUType)
		if !ok {
			return jc, fmt.Errorf("server %s: GPU type %q, want one of %v", s.Name, s.GPUType, GPUTypes)
		}
		jc.GPUs[g] += s.GPUs
		jc.PerServer[g] = max(jc.PerServer[g], s.GPUs)
	}
	return jc, nil
}

// checkWork rejects a workload the run could not finish: jobs out of arrival order, a repeated ID,
// or a job the rule cannot place even on the empty cluster (its errors name a job type without a
// throughput or a Synergy mapping).
func checkWork(c Cluster, m SpeedModel, work []Job, rule Rule) error {
	seen := make(map[int]bool, len(work))
	fits := map[jobKey]bool{}
	for i, j := range work {
		if seen[j.ID] {
			return fmt.Errorf("job %d: ID repeated", j.ID)
		}
		seen[j.ID] = true
		if i > 0 && j.Arrival < work[i-1].Arrival {
			return fmt.Errorf("job %d arrives at %g s, before job %d's %g s (want arrival order)", j.ID, j.Arrival, work[i-1].ID, work[i-1].Arrival)
		}
		if j.Steps <= 0 {
			return fmt.Errorf("job %d: %d steps, want > 0", j.ID, j.Steps)
		}
		k := jobKey{j.Type, j.GPUs}
		if _, done := fits[k]; done {
			continue
		}
		plan, err := rule(NewLedger(c), m, []Job{j})
		if err != nil {
			return err
		}
		if len(plan.Ledger.Jobs()) == 0 {
			return fmt.Errorf("job %d: %q on %d GPUs fits no server of the cluster", j.ID, j.Type, j.GPUs)
		}
		fits[k] = true
	}
	return nil
}

// runTimes are the jobs' run times alone at their slowest GPU type (jobs.RoundBudget's bound).
func runTimes(m SpeedModel, work []Job) []float64 {
	out := make([]float64, len(work))
	for i, j := range work {
		slowest := math.Inf(1)
		for _, t := range GPUTypes {
			if v, ok := m.Tput.Alone(t, j.Type, j.GPUs); ok && v > 0 {
				slowest = min(slowest, v)
			}
		}
		out[i] = float64(j.Steps) / slowest
	}
	return out
}

// Replay applies a run's log to an empty ledger over c, in order: every allocation is checked
// against capacity again, so an error names the event, the server and the resource over-committed.
// Time must not go backwards.
func Replay(c Cluster, log []Event, after func(*Ledger)) error {
	l := NewLedger(c)
	for i, e := range log {
		if i > 0 && e.Time < log[i-1].Time {
			return fmt.Errorf("event %d at %g s is before event %d at %g s", i, e.Time, i-1, log[i-1].Time)
		}
		if err := l.Do(e.Change); err != nil {
			return fmt.Errorf("event %d at %g s (%s job %d): %w", i, e.Time, e.Op, e.Alloc.Job, err)
		}
		if after != nil {
			after(l)
		}
	}
	if n := len(l.Jobs()); n > 0 {
		return fmt.Errorf("the log leaves %d jobs holding allocations", n)
	}
	return nil
}
