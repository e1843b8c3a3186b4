package jobs

func init() {
	Register("tiresias-las", func() Policy { return newTiresias() }, "tiresias", "2d_las", "2das")
}

// tiresias is Tiresias' discretized 2D-LAS (NSDI'19): a job's attained service is GPUs x time;
// queue k holds the jobs whose service since their last promotion is below Thresholds[k] (the
// last queue is unbounded), lower queues run first, FIFO within a queue. Starvation guard: a job
// that has waited PromoteKnob times as long as it has run goes back to the first queue.
type tiresias struct {
	Thresholds  []float64 // GPU-seconds
	PromoteKnob float64
	base        map[int]float64 // attained service at the job's last promotion
}

func newTiresias() *tiresias {
	return &tiresias{Thresholds: []float64{3600, 36000}, PromoteKnob: 8, base: map[int]float64{}}
}

func (t *tiresias) queue(j *JobState, now float64) int {
	ran := j.Attained / float64(j.Type.Scale)
	if waited := now - j.LastRan; !j.Ran && ran > 0 && waited >= t.PromoteKnob*ran {
		t.base[j.Index] = j.Attained
	}
	s := j.Attained - t.base[j.Index]
	for k, th := range t.Thresholds {
		if s < th {
			return k
		}
	}
	return len(t.Thresholds)
}

func (t *tiresias) Priorities(r *Round, prio [][NumGPUs]float64) {
	q := make(map[int]int, len(r.Jobs))
	for _, j := range r.Jobs {
		q[j.Index] = t.queue(j, r.Now)
	}
	ranked(r, prio, func(a, b *JobState) bool {
		if q[a.Index] != q[b.Index] {
			return q[a.Index] < q[b.Index]
		}
		return byArrival(a, b)
	})
}
