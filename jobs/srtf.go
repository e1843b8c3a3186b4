package jobs

func init() { Register("srtf", func() Policy { return srtf{} }, "shortest_remaining_time_first") }

// srtf is shortest remaining time first, preemptive at round boundaries: remaining steps at the
// job's fastest type.
type srtf struct{}

func (srtf) Priorities(r *Round, prio [][NumGPUs]float64) {
	ranked(r, prio, func(a, b *JobState) bool {
		da, db := a.Remaining()/fastest(a, r.Cluster), b.Remaining()/fastest(b, r.Cluster)
		if da != db {
			return da < db
		}
		return byArrival(a, b)
	})
}
