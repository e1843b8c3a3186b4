package fungible

// JobStatus is a present job as a round policy sees it at a boundary: the job, its progress and
// the allocation it held in the round before (Held false when it waited or just arrived).
type JobStatus struct {
	Job
	Done     float64 // steps run so far
	Attained float64 // GPU-seconds held so far
	Waited   float64 // seconds since it last ran (since arrival when it never ran)
	Held     bool
	Prev     Allocation // valid when Held
}

// Remaining is the steps the job has left.
func (s JobStatus) Remaining() float64 { return float64(s.Steps) - s.Done }

// RoundState is what a round policy decides from: the boundary's time, every present job oldest
// first, and the same jobs in the run's order policy's order (what a Rule is given).
type RoundState struct {
	Now     float64
	Present []JobStatus
	Queue   []Job
}

// RoundPolicy allocates a round from the whole state of its jobs, where a Rule sees only the
// ordered queue: learned policies read progress, waiting time and last round's allocation. Like
// a Rule it plans on top of l (empty at a boundary) and leaves l as it was.
type RoundPolicy interface {
	Plan(l *Ledger, m SpeedModel, s RoundState) (Plan, error)
}
