package fungible

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/schedrl/schedrl/jobs"
)

// ParseWorkloadSpec reads jobs=N,lam=S[,multigpu]: N jobs of Gavel's mix, one every S seconds on
// average (Gavel's lam), multi-GPU counts when multigpu is named. The seed is the caller's.
func ParseWorkloadSpec(spec string) (WorkloadConfig, error) {
	var cfg WorkloadConfig
	var haveJobs, haveLam bool
	for _, f := range strings.Split(spec, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(f), "=")
		var err error
		switch k {
		case "jobs":
			cfg.Jobs, err = strconv.Atoi(v)
			haveJobs = err == nil && cfg.Jobs > 0
		case "lam":
			cfg.Interarrival, err = strconv.ParseFloat(v, 64)
			haveLam = err == nil
		case "multigpu":
			cfg.MultiGPU = v == ""
			if v != "" {
				err = fmt.Errorf("takes no value")
			}
		default:
			return cfg, fmt.Errorf("%q: unknown field %q (want jobs=N,lam=S[,multigpu])", spec, k)
		}
		if err != nil {
			return cfg, fmt.Errorf("%q: field %s: %v", spec, k, err)
		}
	}
	if !haveJobs || !haveLam {
		return cfg, fmt.Errorf("%q: want jobs=N (N > 0) and lam=S, e.g. jobs=1000,lam=1800,multigpu", spec)
	}
	return cfg, checkWorkload(spec, cfg)
}

// MaxJobs bounds a generated workload's job count: a hundred times the largest Gavel trace.
const MaxJobs = 200_000

// checkWorkload refuses a workload whose jobs or arrival span pass the limits: a count that
// would fill memory, a mean interarrival that is no finite positive number or would put
// arrivals past jobs.MaxTime.
func checkWorkload(spec string, cfg WorkloadConfig) error {
	switch {
	case cfg.Jobs > MaxJobs:
		return fmt.Errorf("%q: field jobs: %d jobs, at most %d", spec, cfg.Jobs, MaxJobs)
	case !(cfg.Interarrival > 0) || math.IsInf(cfg.Interarrival, 0):
		return fmt.Errorf("%q: field lam: %g s, want a finite number > 0", spec, cfg.Interarrival)
	case cfg.Interarrival*float64(cfg.Jobs) > jobs.MaxTime/10:
		return fmt.Errorf("%q: field lam: %d arrivals %g s apart span about %.3g s, at most %g s", spec, cfg.Jobs, cfg.Interarrival,
			cfg.Interarrival*float64(cfg.Jobs), jobs.MaxTime/10)
	}
	return nil
}

// AsTrace is a generated workload as jobs' trace named name, so the GPU-type world's policies
// (Gavel's LPs among them) run the same jobs.
func AsTrace(work []Job, name string) *jobs.Trace {
	tr := &jobs.Trace{Path: name, Jobs: make([]jobs.Job, len(work))}
	for i, j := range work {
		tr.Jobs[i] = jobs.Job{Index: i, Line: i + 1, Type: jobs.JobType{Model: j.Type, Scale: j.GPUs}, Steps: j.Steps, Arrival: j.Arrival, PriorityWeight: 1}
	}
	return tr
}

// FromTrace is a Gavel trace's jobs as the fungible world's (ID: the job's index in the trace).
func FromTrace(tr *jobs.Trace) []Job {
	work := make([]Job, len(tr.Jobs))
	for i, j := range tr.Jobs {
		work[i] = Job{ID: j.Index, Type: j.Type.Model, GPUs: j.Type.Scale, Steps: j.Steps, Arrival: j.Arrival}
	}
	return work
}
