package eval

import (
	"fmt"
	"github.com/schedrl/schedrl/sim"
	"math"
	"path/filepath"
)

// writeFigures draws every PNG of the report into dir (names from pngNames).
func writeFigures(dir string, m *Metrics, refs []PolicyRef, names map[string]string, paper Paper) error {
	allocBars, fragBars := map[string][]bar{}, map[string][]bar{}
	for _, trace := range m.Traces {
		var ss []series
		for i, ref := range refs {
			r := m.Find(ref.Raw, trace)
			if r == nil {
				continue
			}
			s := series{label: names[ref.Raw], color: colorOf(i), curve: meanCurve(r.PerSeed)}
			paperAlloc, paperFrag := math.NaN(), math.NaN()
			if c, ok := paper.Lookup(ref, trace, m.Tune); ok {
				s.paper = &c
				pt := c.Point()
				paperAlloc = pt.AllocGPUPct130
				if pt.FragGPUPct130 != nil {
					paperFrag = *pt.FragGPUPct130
				}
			}
			ss = append(ss, s)
			allocBars[trace] = append(allocBars[trace], bar{s.label, s.color, r.AllocGPUPct130, paperAlloc})
			fragPct := r.FragGPU130
			for _, f := range []*float64{&fragPct.Mean, &fragPct.HalfWidth, &fragPct.Low, &fragPct.High} {
				*f *= 100 / m.CapacityGPU
			}
			fragBars[trace] = append(fragBars[trace], bar{s.label, s.color, fragPct, paperFrag})
		}
		title := fmt.Sprintf("%s, tune %.2g, %s", trace, m.Tune, seedsLabel(m.Seeds))
		alloc := panelSpec{title: title, yLabel: "GPU allocated (% of cluster GPU capacity)",
			y:     func(p sim.CurvePoint) float64 { return p.AllocGPUPct },
			paper: func(c *PaperCurve) []float64 { return c.AllocGPUPct }}
		zoom := alloc
		zoom.title, zoom.from = "Zoom: arrived ≥ 80%", 80
		if err := curveFigure(filepath.Join(dir, "alloc_"+trace+".png"), ss, alloc, zoom); err != nil {
			return err
		}
		ratio := panelSpec{title: title, yLabel: "Fragment ratio (% of idle GPU)", legendLeft: true,
			y:     func(p sim.CurvePoint) float64 { return p.FragRatioPct },
			paper: func(c *PaperCurve) []float64 { return c.FragRatioPct }}
		// The paper's fragment table is in percent of the cluster's GPUs.
		amount := panelSpec{title: "Fragmented GPU (FGD measure)", yLabel: "Fragmented GPU (% of cluster GPU capacity)",
			y:     func(p sim.CurvePoint) float64 { return 100 * p.FragGPU / m.CapacityGPU },
			paper: func(c *PaperCurve) []float64 { return c.FragGPU }}
		if err := curveFigure(filepath.Join(dir, "frag_"+trace+".png"), ss, ratio, amount); err != nil {
			return err
		}
	}
	if err := barFigure(filepath.Join(dir, "bars_alloc130.png"),
		"GPU allocated at 130% arrival (% of capacity; axis does not start at 0)", allocBars, m.Traces, 80); err != nil {
		return err
	}
	return barFigure(filepath.Join(dir, "bars_frag130.png"),
		"Fragmented GPU at 130% arrival (% of cluster GPU capacity)", fragBars, m.Traces, 0)
}

// seedsLabel is "mean of 5 seeds (49–53)" for a contiguous range, else "mean of 5 seeds".
func seedsLabel(seeds []uint64) string {
	n := len(seeds)
	if n == 1 {
		return fmt.Sprintf("seed %d", seeds[0])
	}
	for i := 1; i < n; i++ {
		if seeds[i] != seeds[i-1]+1 {
			return fmt.Sprintf("mean of %d seeds", n)
		}
	}
	return fmt.Sprintf("mean of %d seeds (%d–%d)", n, seeds[0], seeds[n-1])
}
