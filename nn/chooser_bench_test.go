package nn

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/sugarme/gotch"

	"github.com/schedrl/schedrl/defrag"
	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/internal/repotest"
)

// BenchmarkPlanModel1213 is the plan latency target beside defrag's BenchmarkPlanGreedy1213:
// the state of held-out seed 49 (1213 nodes, fgd, tune 1.3, 10% departures, 200 pending),
// budget 50, K = 1, CPU, replay and per-step predictions included. SCHEDRL_BENCH_CKPT=DIR
// plans with a trained checkpoint (what it picks decides how long the episode is and how
// many rows stay distinct); without it, a freshly initialised network of the default size.
func BenchmarkPlanModel1213(b *testing.B) {
	traces := repotest.OpenbDir()
	snap, err := defrag.MakeState(defrag.StateSpec{Nodes: filepath.Join(traces, "openb_node_list_gpu_node.csv"),
		Pods: filepath.Join(traces, "openb_pod_list_default.csv"), Policy: "fgd", Seed: 49, Tune: 1.3,
		Coverage: 0.95, Departures: 0.1, MaxPending: 200})
	if err != nil {
		b.Skip("openb state: ", err)
	}
	pr, err := defrag.NewProblem(snap, "fgd", env.DefragOptions{Budget: 50, RewardFragment: 1, RewardPending: 1, MigrationCost: 0.1})
	if err != nil {
		b.Fatal(err)
	}
	var pol *DefragPolicy
	if dir := os.Getenv("SCHEDRL_BENCH_CKPT"); dir != "" {
		if pol, err = LoadDefragPolicy(dir, gotch.CPU); err != nil {
			b.Fatal(err)
		}
	} else {
		pol = defragPolicy(b, 7)
	}
	b.ResetTimer()
	cpu0 := processCPU(b)
	steps := 0
	for range b.N {
		p, err := defrag.Best(pr, pol, 1, 49)
		if err != nil {
			b.Fatal(err)
		}
		steps += len(p.Steps)
	}
	// On the oversubscribed shared machine the CPU time per plan is what the wall time would
	// be on an idle core (libtorch runs one thread here).
	b.ReportMetric((processCPU(b)-cpu0)/float64(b.N), "cpu-s/op")
	b.ReportMetric(float64(steps)/float64(b.N), "migrations/op")
}

// processCPU is the process's user+system CPU time in seconds.
func processCPU(b *testing.B) float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
