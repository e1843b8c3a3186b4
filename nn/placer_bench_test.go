package nn

import (
	"cmp"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/sugarme/gotch"

	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/sim"
	"github.com/schedrl/schedrl/sim/simtest"
)

// timedPlacer records the wall time and the thread's CPU time of every decision (the caller
// is pinned to its thread, and libtorch runs single-threaded on it): on a shared machine the
// wall-time tail is mostly waiting for a core, which the CPU time leaves out.
type timedPlacer struct {
	sim.Placer
	took, cpu []time.Duration
	rows      int // merged node rows scored, over the placed tasks
	placed    int
}

func threadCPU() time.Duration {
	var ts syscall.Timespec
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 3 /* CLOCK_THREAD_CPUTIME_ID */, uintptr(unsafe.Pointer(&ts)), 0)
	return time.Duration(ts.Nano())
}

func (p *timedPlacer) Place(c *sim.Cluster, t sim.Task, rng *rand.Rand) (sim.Choice, bool) {
	start, cpu := time.Now(), threadCPU()
	ch, ok := p.Placer.Place(c, t, rng)
	p.took, p.cpu = append(p.took, time.Since(start)), append(p.cpu, threadCPU()-cpu)
	if pl, isCkpt := p.Placer.(*placer); isCkpt && ok {
		p.rows, p.placed = p.rows+pl.merged.NumNodes, p.placed+1
	}
	return ch, ok
}

// BenchmarkPlacerDecision runs a checkpoint placer (default network size, random weights: the
// cost does not depend on them) through one arrival episode of the default openb trace at
// tune 1.3 on the full 1213-node cluster, and reports the decision latency percentiles: the
// environment's encoding plus one forward pass on CPU, per task. Run with -benchtime=1x.
// SCHEDRL_BENCH_CKPT=DIR runs a trained checkpoint instead: its choices decide how many node
// rows stay distinct, so how many the network scores. SCHEDRL_BENCH_TRACE=gpushare40 (an openb
// pod list's suffix) runs another workload.
func BenchmarkPlacerDecision(b *testing.B) {
	p := simtest.Openb(b, cmp.Or(os.Getenv("SCHEDRL_BENCH_TRACE"), "default"), 1.3, 49)
	var err error
	if _, err := Device(config.DeviceConfig{Name: "cpu", Threads: 1}); err != nil {
		b.Fatal(err)
	}
	var pol *Policy
	if dir := os.Getenv("SCHEDRL_BENCH_CKPT"); dir != "" {
		if pol, err = LoadPolicy(dir, gotch.CPU); err != nil {
			b.Fatal(err)
		}
	} else {
		net := benchNet(b)
		pol = &Policy{Net: net, name: "bench", dev: net.VS.Device()}
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var all, cpu []time.Duration
	var rows, placed int
	for range b.N {
		tp := &timedPlacer{Placer: pol.NewPlacer()}
		if _, _, err := p.Run(tp, nil); err != nil {
			b.Fatal(err)
		}
		all, cpu = append(all, tp.took...), append(cpu, tp.cpu...)
		rows, placed = rows+tp.rows, placed+tp.placed
	}
	slices.Sort(all)
	slices.Sort(cpu)
	q := func(d []time.Duration, f float64) float64 {
		return float64(d[int(f*float64(len(d)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(q(all, 0.5), "p50-ms")
	b.ReportMetric(q(all, 0.99), "p99-ms")
	b.ReportMetric(q(all, 1), "max-ms")
	b.ReportMetric(q(cpu, 0.5), "cpu-p50-ms")
	b.ReportMetric(q(cpu, 0.99), "cpu-p99-ms")
	b.ReportMetric(float64(len(all))/float64(b.N), "decisions/op")
	b.ReportMetric(float64(rows)/float64(max(placed, 1)), "rows/decision")
}

func benchNet(b *testing.B) *Net {
	b.Helper()
	spec, _ := env.SpecOf(env.PlacementName)
	var nc config.NetworkConfig
	nc.SetDefaults()
	Seed(1)
	net, err := NewNet(NewArch(spec, nc, 50), gotch.CPU)
	if err != nil {
		b.Fatal(err)
	}
	return net
}
