package fungible

import "testing"

// benchWorld is the acceptance's setting: 1,000 generated multi-GPU jobs (one a minute, far
// beyond what the cluster runs at once) on 36:36:36 8-GPU servers (108 GPUs).
func benchWorld(b *testing.B) (*Ledger, SpeedModel, []Job) {
	s := loadSensitivity(b)
	m := SpeedModel{Tput: syntheticTable(s.JobTypes()), Sens: s}
	queue, err := Generate(m.Tput, s.JobTypes(), WorkloadConfig{Jobs: 1000, Interarrival: 60, MultiGPU: true, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	return NewLedger(mixCluster(b, "36:36:36")), m, queue
}

// BenchmarkTune1000Jobs108GPUs is one TUNE allocation of a 1,000-job queue on an empty
// 108-GPU cluster (a round's recompute).
func BenchmarkTune1000Jobs108GPUs(b *testing.B) {
	l, m, queue := benchWorld(b)
	var plan Plan
	for b.Loop() {
		var err error
		if plan, err = Tune(l, m, queue); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(plan.Ledger.Jobs())), "jobs-started")
}

// BenchmarkGreedy1000Jobs108GPUs is the same for the integrated greedy, whose search per job is
// the widest of the rules.
func BenchmarkGreedy1000Jobs108GPUs(b *testing.B) {
	l, m, queue := benchWorld(b)
	var plan Plan
	for b.Loop() {
		var err error
		if plan, err = Greedy(l, m, queue); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(plan.Ledger.Jobs())), "jobs-started")
}

// BenchmarkRunTune1000Jobs108GPUs is the speed target: a whole run of 1,000 generated multi-GPU
// jobs (one every 1,200 s, near saturation) on 36:36:36 8-GPU servers with TUNE in FIFO order,
// over the real Gavel table and Synergy profiles.
func BenchmarkRunTune1000Jobs108GPUs(b *testing.B) {
	m := gavelModel(b)
	work, err := Generate(m.Tput, m.Sens.JobTypes(), WorkloadConfig{Jobs: 1000, Interarrival: 1200, MultiGPU: true, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	c := mixCluster(b, "36:36:36")
	fifo := mustPolicy(b, "fifo")
	var res Result
	for b.Loop() {
		if res, err = Run(c, m, work, RunConfig{Rule: Tune, Order: fifo}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(res.Rounds), "rounds")
}

// BenchmarkRunPacked1000Jobs108GPUs is the same run with Gavel's max_min_fairness_packed, whose
// LP (over job classes and pairs of them) is re-solved whenever the set of jobs changes.
func BenchmarkRunPacked1000Jobs108GPUs(b *testing.B) {
	m := gavelModel(b)
	work, err := Generate(m.Tput, m.Sens.JobTypes(), WorkloadConfig{Jobs: 1000, Interarrival: 1200, MultiGPU: true, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	c := mixCluster(b, "36:36:36")
	var res Result
	for b.Loop() {
		pl, err := NewRoundPolicy("max_min_fairness_packed")
		if err != nil {
			b.Fatal(err)
		}
		if res, err = Run(c, m, work, RunConfig{Policy: pl}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(res.Rounds), "rounds")
}
