package online

import (
	"cmp"
	"os"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/schedrl/schedrl/sim/simtest"
	"github.com/schedrl/schedrl/tasks"
)

// timedInvoke records the wall and thread CPU time of every invocation that planned (the
// snapshot, the plan and starting its migrations).
type timedInvoke struct {
	d         *Defragmenter
	took, cpu []time.Duration
}

func threadCPU() time.Duration {
	var ts syscall.Timespec
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 3 /* CLOCK_THREAD_CPUTIME_ID */, uintptr(unsafe.Pointer(&ts)), 0)
	return time.Duration(ts.Nano())
}

func (t *timedInvoke) Invoke(v *tasks.View) (float64, error) {
	start, cpu, before := time.Now(), threadCPU(), t.d.Invocations
	next, err := t.d.Invoke(v)
	if t.d.Invocations > before {
		t.took, t.cpu = append(t.took, time.Since(start)), append(t.cpu, threadCPU()-cpu)
	}
	return next, err
}

// BenchmarkReschedulePlan is the latency of one rescheduling plan on the whole 1,213-node
// openb cluster: the default pod list at load 0.9 for 2 h with FGD placing, the periodic
// trigger every 600 s with DRR's whole-cluster budget (95 moves a plan, the 0.5 threshold), so
// each plan sees a loaded cluster. It reports the percentiles over the invocations that
// planned. SCHEDRL_BENCH_METHOD picks the method (default greedy, the DRR policy's
// rescheduler). Run with -benchtime=1x.
func BenchmarkReschedulePlan(b *testing.B) {
	method := cmp.Or(os.Getenv("SCHEDRL_BENCH_METHOD"), "greedy")
	nodes, trace, model := simtest.OpenbTrace(b, "default")
	tl := Timeline{Nodes: nodes, Trace: trace, Model: model, Load: 0.9, Seed: 49, Duration: 2 * 3600, Warmup: 1800,
		Cap: 4 * 3600, Placer: "fgd", Queue: "backfill"}
	cfg := PeriodicConfig(len(nodes), DRREvery)
	cfg.Every, cfg.CapPerHour = 600, 100*cfg.Budget
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var all, cpu []time.Duration
	for range b.N {
		w, err := tl.Build()
		if err != nil {
			b.Fatal(err)
		}
		p, err := NewPlanner(method)
		if err != nil {
			b.Fatal(err)
		}
		d, err := New(cfg, p, w.Placer, tl.Seed)
		if err != nil {
			b.Fatal(err)
		}
		ti := &timedInvoke{d: d}
		if _, err := w.Run(tl, ti, 0); err != nil {
			b.Fatal(err)
		}
		all, cpu = append(all, ti.took...), append(cpu, ti.cpu...)
	}
	if len(all) == 0 {
		b.Fatal("no invocation planned")
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
	b.ReportMetric(float64(len(all))/float64(b.N), "plans/op")
	b.ReportMetric(float64(cfg.Budget), "budget")
}
