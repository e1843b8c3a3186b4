package jobs

func init() { Register("sjf", func() Policy { return sjf{} }, "shortest_job_first") }

// sjf is shortest job first with the run time known (total steps at the job's fastest type),
// non-preemptive: jobs that ran in the previous round keep their GPUs ahead of waiting ones.
type sjf struct{}

func (sjf) Priorities(r *Round, prio [][NumGPUs]float64) {
	ranked(r, prio, func(a, b *JobState) bool {
		if a.Ran != b.Ran {
			return a.Ran
		}
		da, db := float64(a.Steps)/fastest(a, r.Cluster), float64(b.Steps)/fastest(b, r.Cluster)
		if da != db {
			return da < db
		}
		return byArrival(a, b)
	})
}
