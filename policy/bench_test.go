package policy

import (
	"testing"
	"time"

	"github.com/schedrl/schedrl/sim"
	"github.com/schedrl/schedrl/sim/simtest"
)

// BenchmarkPlace runs the whole default-trace workload (tune 1.3, seed 42) per iteration and
// reports placement decisions per second for each policy.
func BenchmarkPlace(b *testing.B) {
	p := simtest.Openb(b, "default", 1.3, 42)
	for _, name := range Placers() {
		b.Run(name, func(b *testing.B) {
			var decisions int
			var elapsed time.Duration
			for i := 0; i < b.N; i++ {
				pl, _ := NewPlacer(name)
				c, err := p.NewCluster()
				if err != nil {
					b.Fatal(err)
				}
				rng := sim.RNG(42, sim.StreamPolicy)
				start := time.Now()
				for _, t := range p.Workload {
					if ch, ok := pl.Place(c, t, rng); ok {
						if err := c.Place(t, ch); err != nil {
							b.Fatal(err)
						}
					}
				}
				elapsed += time.Since(start)
				decisions += len(p.Workload)
			}
			b.ReportMetric(float64(decisions)/elapsed.Seconds(), "decisions/s")
		})
	}
}
