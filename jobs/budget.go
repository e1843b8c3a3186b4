package jobs

import (
	"fmt"
	"math"

	"github.com/schedrl/schedrl/engine"
)

// Limits of the round-based worlds (this package's and fungible's), checked before a run
// starts so that no trace, generated workload or --round makes a run that never ends: a time
// in a trace is at most MaxTime, and a run needs at most MaxRounds rounds by the estimate of
// RoundBudget. docs/jobs.md lists them.
const (
	// MaxTime (seconds) bounds arrival times and a job's run time alone: the clock's limit of
	// the event-driven worlds.
	MaxTime = engine.MaxTime
	// MaxRounds bounds the rounds of one run (minutes of work at the traces' sizes).
	MaxRounds = 10_000_000
)

// RoundBudget refuses a run whose rounds could exceed MaxRounds: one round per job's arrival
// plus each job's run time alone at its slowest usable speed, in rounds of round seconds
// (runTimes, in arrival order), as if the jobs ran one after another. The error names the
// round length and the job that sets the bound.
func RoundBudget(round float64, runTimes []float64) error {
	if !(round > 0) || math.IsInf(round, 0) {
		return fmt.Errorf("round %g s, want a finite number > 0", round)
	}
	rounds, longest := float64(len(runTimes)), 0
	for i, t := range runTimes {
		if !(t <= MaxTime) {
			return fmt.Errorf("job %d runs %.3g s alone at its slowest speed, at most %g s", i, t, float64(MaxTime))
		}
		rounds += math.Ceil(t / round)
		if t > runTimes[longest] {
			longest = i
		}
	}
	if !(rounds <= MaxRounds) {
		return fmt.Errorf("round %g s: the %d jobs could need %.3g rounds (their run times alone, the longest %.3g s, one after another), at most %d: use a longer round",
			round, len(runTimes), rounds, runTimes[longest], MaxRounds)
	}
	return nil
}

// runTimes are the jobs' run times alone at their slowest usable throughput on cluster c.
func runTimes(tr *Trace, tputs [][NumGPUs]float64, c Cluster) []float64 {
	out := make([]float64, len(tr.Jobs))
	for i, j := range tr.Jobs {
		slowest := math.Inf(1)
		for g := range GPU(NumGPUs) {
			if c.GPUs[g] >= j.Type.Scale && tputs[i][g] > 0 {
				slowest = min(slowest, tputs[i][g])
			}
		}
		out[i] = float64(j.Steps) / slowest
	}
	return out
}
