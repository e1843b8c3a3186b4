package eval

import (
	"fmt"
	"strings"
)

// timedReportBlocks lays out the timed report: per workload a table of the measures, the paired
// comparison with the baseline, and the figures.
func timedReportBlocks(m *TimedMetrics) []block {
	seeds := make([]string, len(m.Seeds))
	for i, s := range m.Seeds {
		seeds[i] = fmt.Sprint(s)
	}
	bs := []block{{heading: "Timed policy evaluation", text: fmt.Sprintf(
		"World: %s (%s). Policies: %s. Workloads: %s; seeds %s. Each value is the mean over seeds ± "+
			"the half-width of its 95%% confidence interval (Student's t, n−1 degrees of freedom); JCT "+
			"in hours, makespan in hours. Every number and series is in metrics.json, jct.csv and "+
			"series.csv. Wall time %.1f s.",
		m.Kind, m.Cluster, strings.Join(m.Policies, ", "), strings.Join(m.Workloads, ", "),
		strings.Join(seeds, ", "), m.WallSeconds)}}
	var once []string
	for _, wl := range m.Workloads {
		if r := m.Find(m.Policies[0], wl); r != nil && len(r.PerSeed) < len(m.Seeds) {
			once = append(once, wl)
		}
	}
	if len(once) > 0 {
		bs[0].text += fmt.Sprintf(" %s ran once, on seed %d: a trace file is the same workload on every seed and "+
			"schedrl's rounds draw nothing at random, so its rows are one run, without an interval.",
			strings.Join(once, ", "), m.Seeds[0])
	}
	for _, wl := range m.Workloads {
		bs = append(bs, block{heading: "Workload " + wl, table: timedTable(m, wl)})
		if t := timedPairedTable(m, wl); t != nil {
			bs = append(bs, block{text: fmt.Sprintf("Against %s on the same seeds: the mean per-seed difference "+
				"± the half-width of its 95%% confidence interval (lower JCT and makespan are better).", m.Baseline), table: t})
		}
		for _, f := range timedFigureNames(wl) {
			bs = append(bs, block{image: f})
		}
	}
	return bs
}

// hours is a summary in hours; meanPM keeps its unit. One run has no interval, so none is shown.
func hours(s Summary) string {
	return meanPM(Summary{Mean: s.Mean / 3600, HalfWidth: s.HalfWidth / 3600, N: s.N}, 2)
}

func meanPM(s Summary, digits int) string {
	if s.N <= 1 {
		return fmt.Sprintf("%.*f", digits, s.Mean)
	}
	return pm(s, digits)
}

func timedTable(m *TimedMetrics, wl string) [][]string {
	head := []string{"policy", "jobs", "avg JCT", "p50 JCT", "p95 JCT", "p99 JCT", "makespan", "utilization",
		"GPU alloc % (mean)", "queue length (mean)"}
	delays := false
	if r := m.Find(m.Policies[0], wl); r != nil && r.QueueDelay != nil {
		delays = true
		head = append(head, "queueing delay s: all / gpu / multi-gpu")
	}
	rows := [][]string{head}
	for _, pol := range m.Policies {
		r := m.Find(pol, wl)
		if r == nil {
			continue
		}
		jobs := 0
		if len(r.PerSeed) > 0 {
			jobs = r.PerSeed[0].Jobs
		}
		row := []string{pol, fmt.Sprint(jobs), hours(r.AvgJCT), hours(r.P50JCT), hours(r.P95JCT), hours(r.P99JCT),
			hours(r.Makespan), meanPM(r.Utilization, 3), meanPM(r.AllocGPUMeanPct, 2), meanPM(r.QueueLenMean, 1)}
		if delays {
			row = append(row, fmt.Sprintf("%.0f / %.0f / %.0f", r.QueueDelay["all"].Mean, r.QueueDelay["gpu"].Mean, r.QueueDelay["multi-gpu"].Mean))
		}
		rows = append(rows, row)
	}
	return withConflicts(m, wl, rows)
}

// withConflicts adds, when a multi-agent policy ran on wl, the conflicts per decision point
// that the graph-free decoder had or would have had ("—" for the other policies).
func withConflicts(m *TimedMetrics, wl string, rows [][]string) [][]string {
	cells := []string{"conflicts/decision (graph-free)"}
	shown := false
	for _, pol := range m.Policies {
		r := m.Find(pol, wl)
		if r == nil {
			continue
		}
		decisions, conflicts := 0, 0
		for _, run := range r.PerSeed {
			if run.MAIFS != nil {
				decisions, conflicts = decisions+run.MAIFS.Decisions, conflicts+run.MAIFS.Conflicts
			}
		}
		cell := "—"
		if decisions > 0 {
			cell, shown = fmt.Sprintf("%.2f", float64(conflicts)/float64(decisions)), true
		}
		cells = append(cells, cell)
	}
	if !shown {
		return rows
	}
	for i := range rows {
		rows[i] = append(rows[i], cells[i])
	}
	return rows
}

// pct is a paired difference in % of the baseline's mean with its 95% interval:
// "+1.8% [+0.8, +2.8]".
func pct(p *Paired, base float64) string {
	if base == 0 {
		return "—"
	}
	if p.Diff.N <= 1 {
		return fmt.Sprintf("%+.1f%%", 100*p.Diff.Mean/base)
	}
	return fmt.Sprintf("%+.1f%% [%+.1f, %+.1f]", 100*p.Diff.Mean/base, 100*p.Diff.Low/base, 100*p.Diff.High/base)
}

func timedPairedTable(m *TimedMetrics, wl string) [][]string {
	head := []string{"policy", "Δ avg JCT (h)", "verdict", "Δ p99 JCT (h)", "Δ makespan (h)", "verdict",
		"Δ GPU alloc %", "seeds higher / tied / lower (avg JCT)", "Δ avg JCT, % of the baseline's", "Δ makespan, %"}
	base := m.Find(m.Baseline, wl)
	if base == nil {
		return nil
	}
	if r := m.Find(m.Policies[0], wl); r != nil && r.QueueDelay != nil {
		head = append(head, "Δ GPU queueing delay (s)", "verdict")
	}
	rows := [][]string{head}
	for _, pol := range m.Policies {
		r := m.Find(pol, wl)
		if r == nil || r.VsBaseline == nil {
			continue
		}
		d := func(key string, scale float64) string {
			p := r.VsBaseline[key]
			if p.Diff.N <= 1 {
				return fmt.Sprintf("%+.3f", p.Diff.Mean/scale)
			}
			return fmt.Sprintf("%+.3f ± %.3f", p.Diff.Mean/scale, p.Diff.HalfWidth/scale)
		}
		jct := r.VsBaseline["avg_jct_s"]
		row := []string{pol, d("avg_jct_s", 3600), jct.Verdict(), d("p99_jct_s", 3600),
			d("makespan_s", 3600), r.VsBaseline["makespan_s"].Verdict(), d("alloc_gpu_mean_pct", 1),
			fmt.Sprintf("%d / %d / %d", jct.Wins, jct.Ties, jct.Losses),
			pct(jct, base.AvgJCT.Mean), pct(r.VsBaseline["makespan_s"], base.Makespan.Mean)}
		if p, ok := r.VsBaseline[gpuDelayKey]; ok && len(head) > len(row) {
			row = append(row, d(gpuDelayKey, 1), p.Verdict())
		}
		rows = append(rows, row)
	}
	if len(rows) == 1 {
		return nil
	}
	return rows
}
