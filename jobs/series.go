package jobs

// Sample is the cluster at one round boundary of schedrl's rounds: the jobs the round runs,
// those that wait (present but not chosen), and the GPUs handed out. It holds for the round, but
// for the GPUs of jobs finishing inside it, which idle until the next boundary.
type Sample struct {
	Time     float64
	Running  int
	Waiting  int
	GPUsBusy int
}

// Series is the run's samples, one per round boundary in time order (none in compat mode, whose
// rounds are Gavel's and not of fixed length). Queue length and allocation over time in reports
// come from it.
func (r *Result) Series() []Sample { return r.series }

// sample records one round boundary from the jobs present and which of them were placed.
func (r *Result) sample(now float64, present []*JobState, placed []bool) {
	s := Sample{Time: now}
	for i, j := range present {
		if placed[i] {
			s.Running++
			s.GPUsBusy += j.Type.Scale
		} else {
			s.Waiting++
		}
	}
	r.series = append(r.series, s)
}
