package fungible

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// WorkloadConfig sets a generated workload: Gavel's job mix arriving as a Poisson process.
type WorkloadConfig struct {
	Jobs int
	// Interarrival is the mean time between arrivals in seconds (Gavel's lam: 3600 is one job an
	// hour); any positive value.
	Interarrival float64
	// MultiGPU draws GPU counts 1/2/4/8 with probability 0.70/0.10/0.15/0.05; off, every job
	// takes 1 GPU.
	MultiGPU bool
	Seed     uint64
}

// Generate draws cfg.Jobs jobs: the first arrives at 0, the rest after exponential gaps of mean
// cfg.Interarrival; job type uniform over jobTypes; duration 60·10^U(1.5,3) s with probability
// 0.8, else 60·10^U(3,4) s; steps = duration × the type's throughput alone on V100s at its GPU
// count, rounded down (at least 1). A job type without a throughput at the drawn count runs on 1
// GPU, as Gavel's generator keeps non-distributed types (A3C, CycleGAN, Recommendation) at 1.
// The same config gives the same jobs.
func Generate(t Throughputs, jobTypes []string, cfg WorkloadConfig) ([]Job, error) {
	switch {
	case cfg.Jobs < 0 || cfg.Jobs > MaxJobs:
		return nil, fmt.Errorf("workload: %d jobs, want 0 to %d", cfg.Jobs, MaxJobs)
	case !(cfg.Interarrival > 0) || math.IsInf(cfg.Interarrival, 0):
		return nil, fmt.Errorf("workload: mean interarrival %g s, want a positive number", cfg.Interarrival)
	case len(jobTypes) == 0:
		return nil, fmt.Errorf("workload: no job types")
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6761_7665_6c5f_6d69)) // stream "gavel_mi"
	jobs := make([]Job, 0, cfg.Jobs)
	now := 0.0
	for i := range cfg.Jobs {
		if i > 0 {
			now += rng.ExpFloat64() * cfg.Interarrival
		}
		typ := jobTypes[rng.IntN(len(jobTypes))]
		var duration float64
		if rng.Float64() < 0.8 {
			duration = 60 * math.Pow(10, 1.5+1.5*rng.Float64())
		} else {
			duration = 60 * math.Pow(10, 3+rng.Float64())
		}
		gpus := 1
		if cfg.MultiGPU {
			gpus = scaleFactor(rng.Float64())
		}
		tput, ok := t.Alone("v100", typ, gpus)
		if !ok && gpus > 1 {
			gpus = 1
			tput, ok = t.Alone("v100", typ, 1)
		}
		if !ok || tput <= 0 {
			return nil, fmt.Errorf("workload: job type %q has no V100 throughput on %d GPU", typ, gpus)
		}
		jobs = append(jobs, Job{ID: i, Type: typ, GPUs: gpus, Steps: max(1, int64(duration*tput)), Arrival: now})
	}
	return jobs, nil
}

// scaleFactor maps a uniform draw to Philly's GPU counts as Gavel samples them.
func scaleFactor(r float64) int {
	switch {
	case r < 0.70:
		return 1
	case r < 0.80:
		return 2
	case r < 0.95:
		return 4
	}
	return 8
}
