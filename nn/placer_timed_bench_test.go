package nn

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/sim"
	"github.com/schedrl/schedrl/sim/simtest"
	"github.com/schedrl/schedrl/tasks"
)

// BenchmarkPlacerDecisionTimed is the checkpoint placer's decision latency in the openb timed
// world (`--placer ckpt:DIR`) on DRR's 64-node size and on the whole 1,213-node cluster:
// default-trace Poisson arrivals at offered load 0.9 (seed 101, FIFO with backfill), every
// placement decision timed (the environment's encoding plus one forward pass on CPU, one
// thread; random weights: the cost does not depend on them). The 64 nodes are every 19th
// node of the list, so every node type is in. Run with -benchtime=1x.
func BenchmarkPlacerDecisionTimed(b *testing.B) {
	all, trace, model := simtest.OpenbTrace(b, "default")
	if _, err := Device(config.DeviceConfig{Name: "cpu", Threads: 1}); err != nil {
		b.Fatal(err)
	}
	net := benchNet(b)
	pol := &Policy{Net: net, name: "bench", dev: net.VS.Device()}
	sub := make([]sim.Node, 0, 64)
	for i := 0; len(sub) < 64; i += len(all) / 64 {
		sub = append(sub, all[i])
	}
	for _, bc := range []struct {
		nodes []sim.Node
		tasks int
	}{{sub, 1500}, {all, 6000}} {
		b.Run(fmt.Sprintf("nodes=%d", len(bc.nodes)), func(b *testing.B) {
			c, err := sim.NewCluster(bc.nodes, model)
			if err != nil {
				b.Fatal(err)
			}
			if err := c.SetTieOrder(sim.SeededTieOrder(len(bc.nodes), 101)); err != nil {
				b.Fatal(err)
			}
			_, _, capGPU := c.Capacity()
			w, err := tasks.NewWorkload(trace, capGPU, tasks.WorkloadConfig{Load: 0.9, Seed: 101, Cap: tasks.DefaultCap, Count: bc.tasks})
			if err != nil {
				b.Fatal(err)
			}
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var took, cpu []time.Duration
			for range b.N {
				tp := &timedPlacer{Placer: pol.NewPlacer()}
				q, _ := tasks.NewQueue("backfill")
				if _, err := tasks.Run(c.Clone(), tp, q, w.Arrivals, tasks.Config{Seed: 101}, nil); err != nil {
					b.Fatal(err)
				}
				took, cpu = append(took, tp.took...), append(cpu, tp.cpu...)
			}
			slices.Sort(took)
			slices.Sort(cpu)
			q := func(d []time.Duration, f float64) float64 {
				return float64(d[int(f*float64(len(d)-1))].Microseconds()) / 1000
			}
			b.ReportMetric(q(took, 0.5), "p50-ms")
			b.ReportMetric(q(took, 0.99), "p99-ms")
			b.ReportMetric(q(took, 1), "max-ms")
			b.ReportMetric(q(cpu, 0.5), "cpu-p50-ms")
			b.ReportMetric(q(cpu, 0.99), "cpu-p99-ms")
			b.ReportMetric(float64(len(took))/float64(b.N), "decisions/op")
		})
	}
}
