package fungible

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestGenerateDrawsGavelsJobMix(t *testing.T) {
	tab := syntheticTable(gavelJobTypes)
	const n = 20000
	jobs, err := Generate(tab, gavelJobTypes, WorkloadConfig{Jobs: n, Interarrival: 1200, MultiGPU: true, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	gpus := map[int]int{}
	types := map[string]int{}
	long, distributedJobs := 0, 0
	for i, j := range jobs {
		if j.ID != i || (i == 0 && j.Arrival != 0) || (i > 0 && j.Arrival < jobs[i-1].Arrival) {
			t.Fatalf("job %d: id %d, arrival %g after %g", i, j.ID, j.Arrival, jobs[max(i-1, 0)].Arrival)
		}
		types[j.Type]++
		tput, ok := tab.Alone("v100", j.Type, j.GPUs)
		if !ok {
			t.Fatalf("job %d: %s on %d GPUs has no V100 throughput", i, j.Type, j.GPUs)
		}
		if !distributed(j.Type) && j.GPUs != 1 {
			t.Fatalf("job %d: %s is not distributed but has %d GPUs", i, j.Type, j.GPUs)
		}
		if distributed(j.Type) {
			distributedJobs++
			gpus[j.GPUs]++
		}
		d := float64(j.Steps) / tput // steps = floor(duration × throughput)
		if d < 60*math.Pow(10, 1.5)-1/tput || d > 60*math.Pow(10, 4) {
			t.Fatalf("job %d: duration %g s outside 60·10^[1.5, 4]", i, d)
		}
		if d > 60*1000 {
			long++
		}
	}
	if len(types) != 26 {
		t.Fatalf("%d job types drawn, want all 26", len(types))
	}
	for typ, k := range types {
		if math.Abs(float64(k)-n/26.0) > 5*math.Sqrt(n/26.0) {
			t.Errorf("%s drawn %d times, want about %d", typ, k, n/26)
		}
	}
	near := func(got, want int, of int) bool {
		p := float64(want) / 100
		return math.Abs(float64(got)/float64(of)-p) < 5*math.Sqrt(p*(1-p)/float64(of))
	}
	if !near(long, 20, n) {
		t.Errorf("%d of %d jobs longer than 1,000 minutes, want about 20%%", long, n)
	}
	for g, pct := range map[int]int{1: 70, 2: 10, 4: 15, 8: 5} {
		if !near(gpus[g], pct, distributedJobs) {
			t.Errorf("%d of %d distributed jobs on %d GPUs, want about %d%%", gpus[g], distributedJobs, g, pct)
		}
	}
	if mean := jobs[n-1].Arrival / (n - 1); math.Abs(mean-1200) > 1200*5/math.Sqrt(n) {
		t.Errorf("mean interarrival %g s, want about 1200", mean)
	}
}

func TestGenerateIsSeeded(t *testing.T) {
	tab := syntheticTable(gavelJobTypes)
	cfg := WorkloadConfig{Jobs: 300, Interarrival: 360, MultiGPU: true, Seed: 11}
	a, _ := Generate(tab, gavelJobTypes, cfg)
	b, _ := Generate(tab, gavelJobTypes, cfg)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the same config gave different jobs")
	}
	cfg.Seed = 12
	if c, _ := Generate(tab, gavelJobTypes, cfg); reflect.DeepEqual(a, c) {
		t.Fatal("seeds 11 and 12 gave the same jobs")
	}
	cfg.MultiGPU = false
	single, _ := Generate(tab, gavelJobTypes, cfg)
	for _, j := range single {
		if j.GPUs != 1 {
			t.Fatalf("multi-GPU off, job %d has %d GPUs", j.ID, j.GPUs)
		}
	}
}

func TestGenerateRejectsBadConfigs(t *testing.T) {
	tab := syntheticTable(gavelJobTypes)
	for want, c := range map[string]struct {
		cfg   WorkloadConfig
		types []string
	}{
		"-1 jobs":                 {WorkloadConfig{Jobs: -1, Interarrival: 1}, gavelJobTypes},
		"mean interarrival 0 s":   {WorkloadConfig{Jobs: 1}, gavelJobTypes},
		"mean interarrival NaN s": {WorkloadConfig{Jobs: 1, Interarrival: math.NaN()}, gavelJobTypes},
		"no job types":            {WorkloadConfig{Jobs: 1, Interarrival: 1}, nil},
		`job type "BERT" has no V100 throughput on 1 GPU`: {WorkloadConfig{Jobs: 1, Interarrival: 1}, []string{"BERT"}},
	} {
		if _, err := Generate(tab, c.types, c.cfg); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want %q", err, want)
		}
	}
}
