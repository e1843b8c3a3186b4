package jobs

import "slices"

func init() {
	Register("max_min_fairness", func() Policy { return &maxMin{} }, "las", "gavel_las")
	Register("max_min_fairness_perf", func() Policy { return &maxMin{perf: true} }, "las_perf", "gavel")
}

// maxMin is Gavel's max-min fairness (LAS) and, with perf, its heterogeneity-aware version:
// the allocation (share of time on each type) is the max-min LP's, re-solved whenever the set
// of jobs changes; each round a job's priority on a type is the time it is owed there by the
// round's end (allocation x time since the solve - time received), so every job tends to its
// allocation. Pairs the LP gives nothing run only on GPUs left over, faster types first.
type maxMin struct {
	perf  bool
	lp    maxMinLP
	jobs  []int
	alloc [][NumGPUs]float64
	since float64
	base  map[int][NumGPUs]float64
}

func (p *maxMin) Priorities(r *Round, prio [][NumGPUs]float64) {
	if !slices.EqualFunc(p.jobs, r.Jobs, func(i int, j *JobState) bool { return i == j.Index }) {
		p.solve(r)
	}
	elapsed := r.Now - p.since
	floor := elapsed + r.Length + 1 // above any negative debt, so every allocated pair stays eligible
	for i, j := range r.Jobs {
		best := fastest(j, r.Cluster)
		for g := range GPU(NumGPUs) {
			switch a := p.alloc[i][g]; {
			case j.Throughput[g] <= 0 || r.Cluster.GPUs[g] < j.Type.Scale:
				prio[i][g] = 0
			case a > 1e-6:
				prio[i][g] = floor + a*(elapsed+r.Length) - (j.Service[g] - p.base[j.Index][g])
			default:
				prio[i][g] = 0.5 * j.Throughput[g] / best
			}
		}
	}
}

func (p *maxMin) solve(r *Round) {
	var types []GPU
	for g := range GPU(NumGPUs) {
		if r.Cluster.GPUs[g] > 0 {
			types = append(types, g)
		}
	}
	p.lp.setup(types, r.Cluster, p.perf, len(r.Jobs), func(i int) ([NumGPUs]float64, int, float64) {
		j := r.Jobs[i]
		return j.Throughput, j.Type.Scale, j.PriorityWeight
	})
	x, _ := p.lp.solve()
	p.jobs, p.alloc, p.base, p.since = p.jobs[:0], p.alloc[:0], map[int][NumGPUs]float64{}, r.Now
	for i, j := range r.Jobs {
		var a [NumGPUs]float64
		for k, g := range types {
			a[g] = x[i][k]
		}
		p.jobs = append(p.jobs, j.Index)
		p.alloc = append(p.alloc, a)
		p.base[j.Index] = j.Service
	}
}
