package tasks

import (
	"math"
	"testing"

	"github.com/schedrl/schedrl/sim"
)

func TestTraceWorkload(t *testing.T) {
	trace := []sim.Task{
		{Name: "late", NumGPU: 1, GPUMilli: 1000, Creation: 50, Scheduled: 60, Deletion: 100},
		{Name: "pending", NumGPU: 1, GPUMilli: 1000, Creation: 10, Scheduled: -1, Deletion: 30},
		{Name: "long", NumGPU: 2, GPUMilli: 1000, Creation: 0, Scheduled: 0, Deletion: 90000},
	}
	w, err := NewWorkload(trace, 4000, WorkloadConfig{Cap: DefaultCap})
	if err != nil {
		t.Fatal(err)
	}
	if w.Samples != 2 || w.Pending != 1 || w.Capped != 1 || len(w.Arrivals) != 2 {
		t.Fatalf("samples %d, pending %d, capped %d, arrivals %d", w.Samples, w.Pending, w.Capped, len(w.Arrivals))
	}
	a, b := w.Arrivals[0], w.Arrivals[1]
	if a.Task.Name != "long" || a.RunTime != DefaultCap || b.Task.Name != "late" || b.Time != 50 || b.RunTime != 40 {
		t.Fatalf("arrivals %+v", w.Arrivals)
	}
	// GPU-time 2000 x 14400 + 1000 x 40 milli-s over 4000 milli x 50 s.
	if want := (2000.0*DefaultCap + 1000*40) / (4000 * 50); math.Abs(w.OfferedLoad-want) > 1e-12 {
		t.Fatalf("offered load %v, want %v", w.OfferedLoad, want)
	}
	if w, err = NewWorkload(trace, 4000, WorkloadConfig{Count: 1}); err != nil || len(w.Arrivals) != 1 || w.Arrivals[0].RunTime != 90000 {
		t.Fatalf("count 1, no cap: %v %+v", err, w)
	}
}

func TestPoissonWorkload(t *testing.T) {
	_, w := openbSetup(t, 0, 20000, 0.8, 5)
	_, again := openbSetup(t, 0, 20000, 0.8, 5)
	if len(w.Arrivals) != 20000 || w.Arrivals[19999].Time != again.Arrivals[19999].Time || w.Arrivals[100].Task.Name != again.Arrivals[100].Task.Name {
		t.Fatal("the same seed drew different workloads")
	}
	if math.Abs(w.OfferedLoad-0.8) > 0.08 {
		t.Fatalf("offered load %v, asked 0.8", w.OfferedLoad)
	}
	names := map[string]bool{}
	for i, a := range w.Arrivals {
		if names[a.Task.Name] || a.RunTime > DefaultCap || (i > 0 && a.Time < w.Arrivals[i-1].Time) {
			t.Fatalf("arrival %d: %+v", i, a)
		}
		names[a.Task.Name] = true
	}
}

func TestPoissonDuration(t *testing.T) {
	trace := []sim.Task{{Name: "a", NumGPU: 1, GPUMilli: 1000, Scheduled: 0, Deletion: 100}}
	w, err := NewWorkload(trace, 10000, WorkloadConfig{Load: 0.5, Seed: 1, Duration: 3600})
	if err != nil {
		t.Fatal(err)
	}
	// 0.5 x 10 GPUs / 100 GPU-s per task: 0.05 tasks per second, about 180 in an hour.
	last := w.Arrivals[len(w.Arrivals)-1]
	if w.Span != 3600 || last.Time >= 3600 || len(w.Arrivals) < 130 || len(w.Arrivals) > 230 || w.Arrivals[0].Task.Name != "a-0" {
		t.Fatalf("span %v, %d arrivals, last at %v", w.Span, len(w.Arrivals), last.Time)
	}
}

func TestWorkloadErrors(t *testing.T) {
	ran := []sim.Task{{Name: "a", NumGPU: 1, GPUMilli: 1000, Scheduled: 0, Deletion: 10}}
	cpu := []sim.Task{{Name: "a", Scheduled: 0, Deletion: 10}}
	pending := []sim.Task{{Name: "a", NumGPU: 1, GPUMilli: 1000, Scheduled: -1, Deletion: 10}}
	for name, tc := range map[string]struct {
		trace []sim.Task
		cap   int64
		cfg   WorkloadConfig
	}{
		"no gpus":        {ran, 0, WorkloadConfig{}},
		"negative load":  {ran, 1000, WorkloadConfig{Load: -1}},
		"nan load":       {ran, 1000, WorkloadConfig{Load: math.NaN()}},
		"negative cap":   {ran, 1000, WorkloadConfig{Cap: -1}},
		"poisson no end": {ran, 1000, WorkloadConfig{Load: 1}},
		"no samples":     {pending, 1000, WorkloadConfig{}},
		"no gpu demand":  {cpu, 1000, WorkloadConfig{Load: 1, Count: 5}},
	} {
		if _, err := NewWorkload(tc.trace, tc.cap, tc.cfg); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
