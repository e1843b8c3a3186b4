package fungible

import "github.com/schedrl/schedrl/jobs"

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
// first, the same jobs as jobs' policies see them (Round.Jobs[i] is Present[i]), and, when the
// run has an order policy, the jobs in its order (what a Rule is given).
type RoundState struct {
	Now     float64
	Present []JobStatus
	Round   *jobs.Round
	Queue   []Job
}

// RoundPolicy allocates a round from the whole state of its jobs, where a Rule sees only the
// ordered queue: Gavel's LPs rank (job or pair, GPU type) themselves, learned policies read
// progress, waiting time and last round's allocation. Like a Rule it plans on top of l (empty at
// a boundary) and leaves l as it was. A policy may keep state from round to round: one instance
// per run.
type RoundPolicy interface {
	Plan(l *Ledger, m SpeedModel, s RoundState) (Plan, error)
}

// jobs is the present jobs, oldest first.
func (s RoundState) jobs() []Job {
	out := make([]Job, len(s.Present))
	for i, p := range s.Present {
		out[i] = p.Job
	}
	return out
}
