package eval

import (
	"encoding/csv"
	"fmt"
	"github.com/schedrl/schedrl/sim"
	"strconv"

	"github.com/schedrl/schedrl/internal/atomicfile"
)

// curvesHeader is curves.csv's header: one row per policy, trace, seed and arrived percentage.
var curvesHeader = []string{"policy", "trace", "tune", "seed", "arrived_pct", "alloc_gpu_pct", "frag_gpu", "frag_ratio_pct"}

// writeCurves writes every seed's curve in long format, which pandas or DuckDB pivot at will.
func writeCurves(path string, results []Result) error {
	f, err := atomicfile.Create(path, 0o644)
	if err != nil {
		return err
	}
	defer f.Abort()
	w := csv.NewWriter(f)
	w.Write(curvesHeader)
	num := func(x float64) string { return strconv.FormatFloat(x, 'f', 4, 64) }
	for _, r := range results {
		for _, run := range r.PerSeed {
			for _, p := range run.Curve {
				w.Write([]string{r.Policy, r.Trace, num(r.Tune), strconv.FormatUint(run.Seed, 10),
					strconv.Itoa(p.ArrivedPct), num(p.AllocGPUPct), num(p.FragGPU), num(p.FragRatioPct)})
			}
		}
	}
	if w.Flush(); w.Error() != nil {
		return fmt.Errorf("write %s: %w", path, w.Error())
	}
	return f.Commit()
}

// meanCurve averages the runs' curves point by point; a percentage only some seeds reached
// (a short workload) is averaged over those.
func meanCurve(runs []SeedRun) []sim.CurvePoint {
	var sum []sim.CurvePoint
	var n []int
	for _, run := range runs {
		for _, p := range run.Curve {
			for len(sum) <= p.ArrivedPct {
				sum = append(sum, sim.CurvePoint{ArrivedPct: len(sum)})
				n = append(n, 0)
			}
			s := &sum[p.ArrivedPct]
			s.AllocGPUPct += p.AllocGPUPct
			s.FragGPU += p.FragGPU
			s.FragRatioPct += p.FragRatioPct
			n[p.ArrivedPct]++
		}
	}
	var out []sim.CurvePoint
	for i, s := range sum {
		if n[i] == 0 {
			continue
		}
		k := float64(n[i])
		out = append(out, sim.CurvePoint{ArrivedPct: i, AllocGPUPct: s.AllocGPUPct / k,
			FragGPU: s.FragGPU / k, FragRatioPct: s.FragRatioPct / k})
	}
	return out
}
