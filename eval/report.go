package eval

import (
	"encoding/base64"
	"fmt"
	"html"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/schedrl/schedrl/internal/atomicfile"
)

// A report is built once as blocks and rendered twice, to Markdown and to self-contained
// HTML (figures inlined), so the two never drift apart.
type block struct {
	heading string
	text    string
	table   [][]string // first row is the header
	image   string     // PNG file name in the output directory
}

func reportBlocks(m *Metrics, labels map[string]string) []block {
	seeds := make([]string, len(m.Seeds))
	for i, s := range m.Seeds {
		seeds[i] = fmt.Sprint(s)
	}
	bs := []block{{heading: "Policy evaluation", text: fmt.Sprintf(
		"Policies: %s. Traces: %s (nodes: `%s`). Workload tuning ratio %.2f; seeds %s. "+
			"Each value is the mean over seeds ± the half-width of its 95%% confidence interval "+
			"(Student's t, n−1 degrees of freedom); paper columns are the ATC'23 artifact's means "+
			"over its seeds 42–51 on the same trace. Failed tasks are per run, by kind. Wall time %.1f s.",
		strings.Join(m.Policies, ", "), strings.Join(m.Traces, ", "), m.Nodes, m.Tune,
		strings.Join(seeds, ", "), m.WallSeconds)}}
	for _, trace := range m.Traces {
		bs = append(bs, block{heading: "Trace " + trace, table: traceTable(m, trace, labels)})
		if t := pairedTable(m, trace, labels); t != nil {
			bs = append(bs, block{text: fmt.Sprintf("Against %s on the same seeds: GPU allocated at 130%% arrival, "+
				"the mean per-seed difference ± the half-width of its 95%% confidence interval.", labels[m.Baseline]),
				table: t})
		}
		bs = append(bs, block{image: "alloc_" + trace + ".png"}, block{image: "frag_" + trace + ".png"})
	}
	bs = append(bs, block{heading: "GPU allocated and fragmented at 130% arrival",
		text: "Bars: mean over seeds; whiskers: 95% confidence interval; triangles: the paper's mean (seeds 42–51)."},
		block{image: "bars_alloc130.png"}, block{image: "bars_frag130.png"})
	if t := defragTable(m, labels); t != nil {
		bs = append(bs, block{heading: "Defragmentation", table: t})
	}
	return bs
}

func pm(s Summary, digits int) string {
	return fmt.Sprintf("%.*f ± %.*f", digits, s.Mean, digits, s.HalfWidth)
}

func traceTable(m *Metrics, trace string, labels map[string]string) [][]string {
	rows := [][]string{{"policy", "GPU alloc % @100", "paper @100", "GPU alloc % @130", "paper @130",
		"Δ paper @130", "fragmented GPU % @130 (paper)", "failed tasks", "latency p50 / p99 µs"}}
	for _, pol := range m.Policies {
		r := m.Find(pol, trace)
		if r == nil {
			continue
		}
		p100, p130, delta := "—", "—", "—"
		frag := fmt.Sprintf("%.2f ± %.2f", 100*r.FragGPU130.Mean/m.CapacityGPU, 100*r.FragGPU130.HalfWidth/m.CapacityGPU)
		if r.Paper != nil {
			p100, p130 = fmt.Sprintf("%.2f", r.Paper.AllocGPUPct100), fmt.Sprintf("%.2f", r.Paper.AllocGPUPct130)
			delta = fmt.Sprintf("%+.2f", r.AllocGPUPct130.Mean-r.Paper.AllocGPUPct130)
			if r.Paper.FragGPUPct130 != nil {
				frag += fmt.Sprintf(" (%.2f)", *r.Paper.FragGPUPct130)
			}
		}
		var failed []string
		for _, k := range slices.Sorted(maps.Keys(r.FailedByKind)) {
			failed = append(failed, fmt.Sprintf("%s %.0f", k, r.FailedByKind[k].Mean))
		}
		rows = append(rows, []string{labels[pol], pm(r.AllocGPUPct100, 2), p100, pm(r.AllocGPUPct130, 2),
			p130, delta, frag, strings.Join(failed, ", "),
			fmt.Sprintf("%.1f / %.1f", r.LatencyP50Us.Mean, r.LatencyP99Us.Mean)})
	}
	return rows
}

func pairedTable(m *Metrics, trace string, labels map[string]string) [][]string {
	rows := [][]string{{"policy", "Δ GPU alloc % @130 vs " + labels[m.Baseline], "wins / ties / losses", "verdict"}}
	for _, pol := range m.Policies {
		if r := m.Find(pol, trace); r != nil && r.VsBaseline != nil {
			p := r.VsBaseline
			rows = append(rows, []string{labels[pol], fmt.Sprintf("%+.3f ± %.3f", p.Diff.Mean, p.Diff.HalfWidth),
				fmt.Sprintf("%d / %d / %d", p.Wins, p.Ties, p.Losses), p.Verdict()})
		}
	}
	if len(rows) == 1 {
		return nil
	}
	return rows
}

func defragTable(m *Metrics, labels map[string]string) [][]string {
	rows := [][]string{{"policy", "trace", "fragment removed (GPU)", "pending GPU placed", "migrations", "plan latency s"}}
	for _, r := range m.Results {
		if d := r.Defrag; d != nil {
			rows = append(rows, []string{labels[r.Policy], r.Trace, pm(d.FragRemovedGPU, 2),
				pm(d.PendingGPUPlaced, 2), pm(d.MigrationsUsed, 1), pm(d.PlanLatencySeconds, 3)})
		}
	}
	if len(rows) == 1 {
		return nil
	}
	return rows
}

func renderMarkdown(bs []block) string {
	var b strings.Builder
	for i, bl := range bs {
		switch {
		case bl.heading != "" && i == 0:
			fmt.Fprintf(&b, "# %s\n\n", bl.heading)
		case bl.heading != "":
			fmt.Fprintf(&b, "## %s\n\n", bl.heading)
		}
		if bl.text != "" {
			fmt.Fprintf(&b, "%s\n\n", bl.text)
		}
		for j, row := range bl.table {
			fmt.Fprintf(&b, "| %s |\n", strings.Join(row, " | "))
			if j == 0 {
				fmt.Fprintf(&b, "|%s\n", strings.Repeat("---|", len(row)))
			}
		}
		if bl.table != nil {
			b.WriteString("\n")
		}
		if bl.image != "" {
			fmt.Fprintf(&b, "![%s](%s)\n\n", strings.TrimSuffix(bl.image, ".png"), bl.image)
		}
	}
	return b.String()
}

const htmlHead = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>schedrl policy evaluation</title>
<style>
body{font-family:system-ui,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:1em 0}th,td{border:1px solid #ccc;padding:4px 8px;text-align:right}
th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}img{max-width:100%}
</style></head><body>
`

// renderHTML inlines each PNG from dir so the page stands alone (a registry stores one file).
func renderHTML(bs []block, dir string) (string, error) {
	var b strings.Builder
	b.WriteString(htmlHead)
	for i, bl := range bs {
		tag := "h2"
		if i == 0 {
			tag = "h1"
		}
		if bl.heading != "" {
			fmt.Fprintf(&b, "<%s>%s</%s>\n", tag, html.EscapeString(bl.heading), tag)
		}
		if bl.text != "" {
			fmt.Fprintf(&b, "<p>%s</p>\n", html.EscapeString(strings.ReplaceAll(bl.text, "`", "")))
		}
		if bl.table != nil {
			b.WriteString("<table>\n")
			for j, row := range bl.table {
				cell := "td"
				if j == 0 {
					cell = "th"
				}
				b.WriteString("<tr>")
				for _, c := range row {
					fmt.Fprintf(&b, "<%s>%s</%s>", cell, html.EscapeString(c), cell)
				}
				b.WriteString("</tr>\n")
			}
			b.WriteString("</table>\n")
		}
		if bl.image != "" {
			data, err := os.ReadFile(filepath.Join(dir, bl.image))
			if err != nil {
				return "", fmt.Errorf("report: %w", err)
			}
			fmt.Fprintf(&b, "<p><img alt=\"%s\" src=\"data:image/png;base64,%s\"></p>\n",
				html.EscapeString(bl.image), base64.StdEncoding.EncodeToString(data))
		}
	}
	b.WriteString("</body></html>\n")
	return b.String(), nil
}

// writeReport writes report.md and report.html into dir, after the PNGs.
func writeReport(dir string, m *Metrics, labels map[string]string) error {
	return writeBlocks(dir, reportBlocks(m, labels))
}

// writeBlocks renders a report's blocks to report.md and report.html in dir.
func writeBlocks(dir string, bs []block) error {
	if err := atomicfile.WriteFile(filepath.Join(dir, "report.md"), []byte(renderMarkdown(bs)), 0o644); err != nil {
		return err
	}
	page, err := renderHTML(bs, dir)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(dir, "report.html"), []byte(page), 0o644)
}
