package defrag

import (
	"syscall"
	"testing"

	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/internal/repotest"
)

// openbProblem is the held-out openb state of a seed (1213 nodes).
func openbProblem(tb testing.TB, seed uint64, budget int) Problem {
	tb.Helper()
	snap, err := MakeState(StateSpec{Nodes: repotest.OpenbNodes(), Pods: repotest.OpenbPods("default"), Policy: "fgd", Seed: seed, Tune: 1.3,
		Coverage: 0.95, Departures: 0.1, MaxPending: 200})
	if err != nil {
		tb.Fatal(err)
	}
	pr, err := NewProblem(snap, "fgd", env.DefragOptions{Budget: budget, RewardFragment: 1, RewardPending: 1, MigrationCost: 0.1})
	if err != nil {
		tb.Fatal(err)
	}
	return pr
}

// BenchmarkPlanGreedy1213 is the plan latency target: 1213 nodes, budget 50, K = 1, CPU,
// replay and per-step predictions included.
func BenchmarkPlanGreedy1213(b *testing.B) {
	pr := openbProblem(b, 49, 50)
	planner, err := NewPlanner("greedy")
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	cpu0 := cpuSeconds(b)
	for range b.N {
		if _, err := Best(pr, planner, 1, 49); err != nil {
			b.Fatal(err)
		}
	}
	// The shared machine is often oversubscribed; CPU time per plan is what wall time would be
	// on an idle core.
	b.ReportMetric((cpuSeconds(b)-cpu0)/float64(b.N), "cpu-s/op")
}

// cpuSeconds is the process's user+system CPU time.
func cpuSeconds(b *testing.B) float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
