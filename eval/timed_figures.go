package eval

import (
	"encoding/csv"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/schedrl/schedrl/internal/atomicfile"
)

// The timed report's figures, per workload (file names from timedFigureNames).
const (
	jctCDFPrefix   = "jct_cdf_"
	allocPrefix    = "alloc_time_"
	queuePrefix    = "queue_time_"
	timedJCTFile   = "jct.csv"
	timedSeriesCSV = "series.csv"
)

// timedFigureNames are the PNGs of one workload, in report order.
func timedFigureNames(workload string) []string {
	n := fileName(workload) + ".png"
	return []string{jctCDFPrefix + n, allocPrefix + n, queuePrefix + n}
}

// writeTimedCSVs writes jct.csv (one row per measured job of every run) and series.csv (one row
// per sample of every run), in long format.
func writeTimedCSVs(dir string, m *TimedMetrics) error {
	num := func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
	jct := [][]string{{"policy", "workload", "seed", "job", "jct_s"}}
	series := [][]string{{"policy", "workload", "seed", "time_s", "alloc_gpu_pct", "running", "waiting"}}
	for _, r := range m.Results {
		for _, run := range r.PerSeed {
			seed := strconv.FormatUint(run.Seed, 10)
			for i, x := range run.JCT {
				jct = append(jct, []string{r.Policy, r.Workload, seed, strconv.Itoa(i), num(x)})
			}
			for _, p := range run.Series {
				series = append(series, []string{r.Policy, r.Workload, seed, num(p.Time), num(p.AllocGPUPct),
					strconv.Itoa(p.Running), strconv.Itoa(p.Waiting)})
			}
		}
	}
	if err := writeCSV(filepath.Join(dir, timedJCTFile), jct); err != nil {
		return err
	}
	return writeCSV(filepath.Join(dir, timedSeriesCSV), series)
}

func writeCSV(path string, rows [][]string) error {
	f, err := atomicfile.Create(path, 0o644)
	if err != nil {
		return err
	}
	defer f.Abort()
	w := csv.NewWriter(f)
	if err := w.WriteAll(rows); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Commit()
}

// writeTimedFigures draws, per workload: the JCT CDF of every policy (all seeds' jobs pooled, on
// a log time axis), and the allocation and queue length over time of every policy on the first
// seed.
func writeTimedFigures(dir string, m *TimedMetrics) error {
	for _, wl := range m.Workloads {
		names := timedFigureNames(wl)
		cdf := newPlot(fmt.Sprintf("JCT CDF, %s, %s pooled", wl, seedsWord(m.Seeds)), "JCT (hours, log scale)", "fraction of jobs")
		cdf.X.Scale, cdf.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
		cdf.Y.Min, cdf.Y.Max = 0, 1
		seed := fmt.Sprintf("%s, seed %d", wl, m.Seeds[0])
		alloc := newPlot("GPU allocation over time, "+seed, "time (hours)", "GPUs allocated (% of capacity)")
		queue := newPlot("Queue length over time, "+seed, "time (hours)", "jobs waiting")
		for i, pol := range m.Policies {
			r := m.Find(pol, wl)
			if r == nil {
				continue
			}
			c := colorOf(i)
			var jct []float64
			for _, run := range r.PerSeed {
				jct = append(jct, run.JCT...)
			}
			if xys := cdfPoints(jct); len(xys) > 0 {
				if err := addLine(cdf, pol, c, xys); err != nil {
					return err
				}
			}
			series := r.PerSeed[0].Series
			if len(series) == 0 {
				continue
			}
			if err := addLine(alloc, pol, c, steps(series, func(p TimedPoint) float64 { return p.AllocGPUPct })); err != nil {
				return err
			}
			if err := addLine(queue, pol, c, steps(series, func(p TimedPoint) float64 { return float64(p.Waiting) })); err != nil {
				return err
			}
		}
		// Legends where the lines are not: the CDF's top left, allocation's bottom left (it
		// rises at once), the queue's top right (it drains towards the end).
		cdf.Legend.Left, cdf.Legend.Top = true, true
		alloc.Legend.Left, alloc.Legend.Top = true, false
		queue.Legend.Left, queue.Legend.Top = false, true
		cdf.Legend.XOffs, alloc.Legend.XOffs, queue.Legend.XOffs = vg.Points(6), vg.Points(6), -vg.Points(6)
		alloc.Legend.YOffs = vg.Points(6)
		alloc.Y.Min, alloc.Y.Max = 0, 105
		alloc.Y.Tick.Marker = stepTicks{Step: 20}
		queue.Y.Min = 0
		for _, p := range []*plot.Plot{alloc, queue} {
			if p.X.Max > p.X.Min {
				p.X.Tick.Marker = stepTicks{Step: niceStep(p.X.Max - p.X.Min)}
			}
		}
		for k, p := range []*plot.Plot{cdf, alloc, queue} {
			if err := savePanels(filepath.Join(dir, names[k]), [][]*plot.Plot{{p}}, 8*vg.Inch, 4.8*vg.Inch); err != nil {
				return err
			}
		}
	}
	return nil
}

func seedsWord(seeds []uint64) string {
	if len(seeds) == 1 {
		return fmt.Sprintf("seed %d", seeds[0])
	}
	return fmt.Sprintf("%d seeds", len(seeds))
}

func addLine(p *plot.Plot, label string, c interface{ RGBA() (r, g, b, a uint32) }, xys plotter.XYs) error {
	l, err := plotter.NewLine(xys)
	if err != nil {
		return fmt.Errorf("plot %s: %w", label, err)
	}
	l.Color, l.Width = c, vg.Points(1.4)
	p.Add(l)
	p.Legend.Add(label, l)
	return nil
}

// cdfPoints is the empirical CDF of xs (seconds) as a step line in hours; JCTs of 0 have no
// place on a log axis and are left out.
func cdfPoints(xs []float64) plotter.XYs {
	s := slices.Clone(xs)
	slices.Sort(s)
	var out plotter.XYs
	n := float64(len(s))
	for i, x := range s {
		if !(x > 0) || math.IsInf(x, 0) {
			continue
		}
		h := x / 3600
		out = append(out, plotter.XY{X: h, Y: float64(i) / n}, plotter.XY{X: h, Y: float64(i+1) / n})
	}
	return out
}

// steps draws a series as a step function in hours: each sample holds until the next.
func steps(series []TimedPoint, y func(TimedPoint) float64) plotter.XYs {
	var out plotter.XYs
	for i, p := range series {
		if i > 0 {
			out = append(out, plotter.XY{X: p.Time / 3600, Y: y(series[i-1])})
		}
		out = append(out, plotter.XY{X: p.Time / 3600, Y: y(p)})
	}
	return out
}
