package tasks

import (
	"math"
	"strings"
	"testing"

	"github.com/schedrl/schedrl/policy"
	"github.com/schedrl/schedrl/sim"
)

// Durations, counts, warm-ups and series steps that would run without end, fill memory or
// measure nothing are refused with the field named (issue 34, classes 1 and 2).
func TestWorkloadAndRunLimits(t *testing.T) {
	ran := []sim.Task{{Name: "a", NumGPU: 1, GPUMilli: 1000, Scheduled: 0, Deletion: 100}}
	for _, tc := range []struct {
		name  string
		trace []sim.Task
		cfg   WorkloadConfig
		want  string
	}{
		{"duration 1e308", ran, WorkloadConfig{Load: 1, Duration: 1e308}, "duration 1e+308 s: each at most"},
		{"duration NaN", ran, WorkloadConfig{Load: 1, Duration: math.NaN()}, "duration NaN s"},
		{"duration +Inf", ran, WorkloadConfig{Load: 1, Duration: math.Inf(1)}, "duration +Inf s"},
		{"duration of ten million arrivals", ran, WorkloadConfig{Load: 1, Duration: 1e9}, "offers about 1e+07 arrivals, at most 1000000"},
		{"count 1e9", ran, WorkloadConfig{Load: 1, Count: 1e9}, "task count 1000000000, at most"},
		{"cap NaN", ran, WorkloadConfig{Cap: math.NaN()}, "cap NaN s"},
		{"run time beyond the clock", []sim.Task{{Name: "old", NumGPU: 1, GPUMilli: 1000, Scheduled: 0, Deletion: math.MaxInt64}}, WorkloadConfig{}, "task old runs 9.223372036854776e+18 s"},
		{"creations beyond the clock", []sim.Task{
			{Name: "x", NumGPU: 1, GPUMilli: 1000, Creation: 0, Scheduled: 0, Deletion: 1},
			{Name: "y", NumGPU: 1, GPUMilli: 1000, Creation: 1e15, Scheduled: 1e15, Deletion: 1e15 + 1}}, WorkloadConfig{}, "task y is created 1e+15 s after task x"},
	} {
		if _, err := NewWorkload(tc.trace, 1000, tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want it to contain %q", tc.name, err, tc.want)
		}
	}
	arrivals := []Arrival{{Task: gpuTask("a", 1, 1000), Time: 0, RunTime: 10}, {Task: gpuTask("b", 1, 1000), Time: 5, RunTime: 10}}
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"warm-up NaN (nothing measured, a mean JCT of 0)", Config{Warmup: math.NaN()}, "warm-up NaN s"},
		{"series step that does not move the clock", Config{SeriesStep: 1e-300}, "more than 1000000 points"},
		{"series step +Inf", Config{SeriesStep: math.Inf(1)}, "series step +Inf s"},
	} {
		c, err := sim.NewCluster([]sim.Node{{Name: "n0", CPU: 64000, Mem: 64000, GPUs: 2, GPUType: "T4"}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		fgd, _ := policy.NewPlacer("fgd")
		q, _ := NewQueue("backfill")
		if _, err := Run(c, fgd, q, arrivals, tc.cfg, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want it to contain %q", tc.name, err, tc.want)
		}
	}
}
