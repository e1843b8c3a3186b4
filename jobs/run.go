package jobs

import (
	"fmt"
	"math"

	"github.com/schedrl/schedrl/sim"
)

// Config is one simulation.
type Config struct {
	Cluster Cluster
	Policy  string  // a registered policy name or alias (Policies)
	Round   float64 // round length in seconds; 0 means 360, Gavel's default
	// Window counts the jobs with Window[0] <= Index < Window[1] (Gavel's -s/-e); the run ends
	// when they have all finished. {0, 0} counts every job.
	Window [2]int
	Seed   uint64
	Compat string // "" for schedrl's round model, "gavel" for Gavel's simulator
	// Log, when not nil, receives every arrival, start, preemption and completion (a
	// version-2 log with LogHeader's header; log.go). Run flushes it.
	Log *sim.LogWriter
}

// Result is what a run measured over its window's jobs.
type Result struct {
	AvgJCT      float64         // mean JCT (s) of the counted jobs that finished
	Makespan    float64         // time (s) at which the run ended
	WindowSpan  float64         // from the first counted job's arrival to the run's end (s)
	Utilization float64         // busy GPU-time over GPU-time, from 0 to the end
	Jobs        int             // jobs counted
	JCT         map[int]float64 // job index -> JCT (s)
	Dropped     []int           // counted jobs Gavel drops after failed rounds (compat only)
	Rounds      int
	series      []Sample // per round boundary (series.go)
	// Finish-time fairness (fairness.go): per counted job that finished, JCT over its time
	// alone on a 1/N share of the cluster; their mean, maximum and the share above 1.
	Rho                          map[int]float64
	RhoMean, RhoMax, RhoAboveOne float64
}

// Compat modes.
const (
	CompatNone  = ""
	CompatGavel = "gavel"
)

// Run simulates the trace on the cluster.
func Run(tr *Trace, t *Throughputs, cfg Config) (Result, error) {
	tputs, err := tr.throughputsOf(t)
	if err != nil {
		return Result{}, err
	}
	if cfg.Round == 0 {
		cfg.Round = 360
	}
	if !(cfg.Round > 0) || math.IsInf(cfg.Round, 0) {
		return Result{}, fmt.Errorf("round %g s, want > 0", cfg.Round)
	}
	if cfg.Window == [2]int{} {
		cfg.Window = [2]int{0, len(tr.Jobs)}
	}
	if w := cfg.Window; w[0] < 0 || w[1] <= w[0] || w[1] > len(tr.Jobs) {
		return Result{}, fmt.Errorf("window %d-%d: want 0 <= start < end <= %d (the trace's jobs)", w[0], w[1], len(tr.Jobs))
	}
	name, err := canonical(cfg.Policy)
	if err != nil {
		return Result{}, err
	}
	for _, j := range tr.Jobs {
		fits := false
		for g := range GPU(NumGPUs) {
			fits = fits || (cfg.Cluster.GPUs[g] >= j.Type.Scale && tputs[j.Index][g] > 0)
		}
		if !fits {
			return Result{}, fmt.Errorf("%s:%d: job %s fits no GPU type of cluster %v (too few GPUs or no throughput)", tr.Path, j.Line, j.Type, cfg.Cluster.GPUs)
		}
	}
	if err := RoundBudget(cfg.Round, runTimes(tr, tputs, cfg.Cluster)); err != nil {
		return Result{}, fmt.Errorf("%s: %w", tr.Path, err)
	}
	switch cfg.Compat {
	case CompatGavel:
		return runGavel(tr, tputs, cfg, name)
	case CompatNone:
		return runRounds(tr, tputs, cfg, name)
	}
	return Result{}, fmt.Errorf("compat mode %q: want %q or none", cfg.Compat, CompatGavel)
}

// summary fills the result's JCT mean and count from its JCT map.
func (r *Result) summarise(w [2]int) {
	r.Jobs = w[1] - w[0]
	sum := 0.0 // in index order: a map's order would change the last bits from run to run
	for i := w[0]; i < w[1]; i++ {
		sum += r.JCT[i]
	}
	if len(r.JCT) > 0 {
		r.AvgJCT = sum / float64(len(r.JCT))
	}
}
