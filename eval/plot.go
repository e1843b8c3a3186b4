package eval

import (
	"fmt"
	"github.com/schedrl/schedrl/sim"
	"image/color"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/schedrl/schedrl/internal/atomicfile"
)

// displayNames are the paper's names for the heuristics, used in legends and tables.
var displayNames = map[string]string{
	"random": "Random", "dotprod": "DotProd", "clustering": "GpuClustering",
	"packing": "GpuPacking", "bestfit": "BestFit", "fgd": "FGD",
}

// labels names each policy in plots and tables: heuristics by the paper's names, checkpoints
// by the shortest trailing part of their path that tells them apart (pipeline checkpoints all
// end in ".../out"), registry references as written.
func labels(refs []PolicyRef) map[string]string {
	out := map[string]string{}
	var dirs [][]string
	for _, r := range refs {
		switch r.Kind {
		case Heuristic:
			out[r.Raw] = r.Name
			if d, ok := displayNames[r.Name]; ok {
				out[r.Raw] = d
			}
		case Checkpoint:
			dirs = append(dirs, strings.Split(filepath.ToSlash(filepath.Clean(r.Dir)), "/"))
		default:
			out[r.Raw] = r.Raw
		}
	}
	suffix := func(d []string, k int) string { return strings.Join(d[max(0, len(d)-k):], "/") }
	longest := 0
	for _, d := range dirs {
		longest = max(longest, len(d))
	}
	k := 1
	for unique := false; !unique && k <= longest; k++ {
		seen := map[string]bool{}
		unique = true
		for _, d := range dirs {
			unique = unique && !seen[suffix(d, k)]
			seen[suffix(d, k)] = true
		}
	}
	i := 0
	for _, r := range refs {
		if r.Kind == Checkpoint {
			out[r.Raw] = "ckpt:" + suffix(dirs[i], k-1)
			i++
		}
	}
	return out
}

// palette is matplotlib's tab10, so the figures read like the paper's; a policy keeps its
// colour in every figure of a report.
var palette = []color.RGBA{
	{31, 119, 180, 255}, {255, 127, 14, 255}, {44, 160, 44, 255}, {214, 39, 40, 255},
	{148, 103, 189, 255}, {140, 86, 75, 255}, {227, 119, 194, 255}, {127, 127, 127, 255},
	{188, 189, 34, 255}, {23, 190, 207, 255},
}

func colorOf(i int) color.Color { return palette[i%len(palette)] }

const (
	arrivedLabel = "Arrived workload (% of cluster GPU capacity)"
	dpi          = 144
)

// series is one policy's mean curve on one trace, with the paper's when there is one.
type series struct {
	label string
	color color.Color
	curve []sim.CurvePoint
	paper *PaperCurve
}

// panelSpec is one panel of a curve figure.
type panelSpec struct {
	title, yLabel string
	from          int // first arrived percentage shown
	y             func(sim.CurvePoint) float64
	paper         func(*PaperCurve) []float64 // the paper's matching curve; nil: no overlay
	legendLeft    bool                        // legend in the top-left corner, else bottom-right
}

// curveFigure draws panels side by side, each a metric against arrived workload, with the
// legend in the first one.
func curveFigure(path string, ss []series, panels ...panelSpec) error {
	row := make([]*plot.Plot, len(panels))
	for i, spec := range panels {
		p, err := curvePanel(spec, ss)
		if err != nil {
			return err
		}
		if i > 0 {
			p.Legend = plot.NewLegend()
		}
		row[i] = p
	}
	return savePanels(path, [][]*plot.Plot{row}, 12*vg.Inch, 4.8*vg.Inch)
}

var paperDashes = []vg.Length{vg.Points(4), vg.Points(3)}

func curvePanel(spec panelSpec, ss []series) (*plot.Plot, error) {
	p := newPlot(spec.title, arrivedLabel, spec.yLabel)
	p.X.Min, p.X.Max = float64(spec.from), 130
	yMin, yMax := math.Inf(1), math.Inf(-1)
	line := func(xys plotter.XYs, c color.Color, width vg.Length, dashes []vg.Length) (*plotter.Line, error) {
		for _, xy := range xys {
			yMin, yMax = min(yMin, xy.Y), max(yMax, xy.Y)
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return nil, err
		}
		l.Color, l.Width, l.Dashes = c, width, dashes
		p.Add(l)
		return l, nil
	}
	overlaid := false
	for _, s := range ss {
		var xys plotter.XYs
		for _, pt := range s.curve {
			if pt.ArrivedPct >= spec.from {
				xys = append(xys, plotter.XY{X: float64(pt.ArrivedPct), Y: spec.y(pt)})
			}
		}
		if len(xys) == 0 {
			continue
		}
		l, err := line(xys, s.color, vg.Points(1.6), nil)
		if err != nil {
			return nil, fmt.Errorf("plot %s: %w", s.label, err)
		}
		p.Legend.Add(s.label, l)
		if spec.paper == nil || s.paper == nil || spec.paper(s.paper) == nil {
			continue
		}
		var pxy plotter.XYs
		for pct, v := range spec.paper(s.paper) {
			if pct >= spec.from {
				pxy = append(pxy, plotter.XY{X: float64(pct), Y: v})
			}
		}
		if _, err := line(pxy, s.color, vg.Points(1), paperDashes); err != nil {
			return nil, fmt.Errorf("plot paper %s: %w", s.label, err)
		}
		overlaid = true
	}
	if overlaid {
		key, _ := plotter.NewLine(plotter.XYs{{}})
		key.Color, key.Width, key.Dashes = color.Gray{90}, vg.Points(1), paperDashes
		p.Legend.Add("dashed: paper (ATC'23, seeds 42–51)", key)
	}
	p.Legend.Top, p.Legend.Left = spec.legendLeft, spec.legendLeft
	p.Legend.XOffs, p.Legend.YOffs = vg.Points(6), -vg.Points(6)
	if !spec.legendLeft {
		p.Legend.XOffs, p.Legend.YOffs = -vg.Points(6), vg.Points(6)
	}
	if !math.IsInf(yMin, 1) {
		p.Y.Min, p.Y.Max = min(0, yMin), yMax+0.02*(yMax-min(0, yMin))
		if spec.from > 0 {
			p.Y.Min = math.Floor(yMin/5) * 5
		}
		p.Y.Tick.Marker = stepTicks{Step: niceStep(p.Y.Max - p.Y.Min)}
	}
	p.X.Tick.Marker = stepTicks{Step: 20}
	if spec.from > 0 {
		p.X.Tick.Marker = stepTicks{Step: 10}
	}
	return p, nil
}

// bar is one policy's summary on one trace, with the paper's mean when there is one.
type bar struct {
	label string
	color color.Color
	value Summary
	paper float64 // NaN when absent
}

// barFigure draws one horizontal bar panel per trace: the mean over seeds with its 95% CI
// as whiskers and the paper's mean as a black triangle. The value axis starts at xMin so that
// differences of a point or two stay visible; the axis label says so.
func barFigure(path, xLabel string, panels map[string][]bar, traces []string, xMin float64) error {
	cols := min(2, len(traces))
	rows := (len(traces) + cols - 1) / cols
	grid := make([][]*plot.Plot, rows)
	for i := range grid {
		grid[i] = make([]*plot.Plot, cols)
	}
	for i, trace := range traces {
		p, err := barPanel(trace, xLabel, panels[trace], xMin)
		if err != nil {
			return err
		}
		grid[i/cols][i%cols] = p
	}
	panelHeight := vg.Length(1.3+0.32*float64(len(panels[traces[0]]))) * vg.Inch
	return savePanels(path, grid, vg.Length(cols)*6*vg.Inch, vg.Length(rows)*panelHeight)
}

func barPanel(trace, xLabel string, bars []bar, xMin float64) (*plot.Plot, error) {
	p := newPlot("trace: "+trace, xLabel, "")
	n := len(bars)
	names := make([]string, n)
	var errs errorXY
	var paper plotter.XYs
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, b := range bars {
		pos := float64(n - 1 - i) // first policy on top
		names[n-1-i] = b.label
		bc, err := plotter.NewBarChart(plotter.Values{b.value.Mean}, vg.Points(14))
		if err != nil {
			return nil, fmt.Errorf("bar %s: %w", b.label, err)
		}
		bc.Horizontal, bc.XMin, bc.Color = true, pos, b.color
		bc.LineStyle.Width = 0
		p.Add(bc)
		errs = append(errs, struct{ x, y, lo, hi float64 }{b.value.Mean, pos, b.value.HalfWidth, b.value.HalfWidth})
		lo, hi = min(lo, b.value.Low), max(hi, b.value.High)
		if !math.IsNaN(b.paper) {
			paper = append(paper, plotter.XY{X: b.paper, Y: pos})
			lo, hi = min(lo, b.paper), max(hi, b.paper)
		}
	}
	eb, err := plotter.NewXErrorBars(errs)
	if err != nil {
		return nil, fmt.Errorf("error bars: %w", err)
	}
	eb.Width, eb.CapWidth = vg.Points(1.2), vg.Points(8)
	p.Add(eb)
	if len(paper) > 0 {
		sc, err := plotter.NewScatter(paper)
		if err != nil {
			return nil, fmt.Errorf("paper markers: %w", err)
		}
		sc.Shape, sc.Radius, sc.Color = draw.PyramidGlyph{}, vg.Points(4), color.Black
		p.Add(sc)
		p.Legend.Add("paper (ATC'23)", sc)
		// The legend goes beside the shorter of the outer bars, where there is room.
		p.Legend.Top = bars[0].value.Mean <= bars[n-1].value.Mean
	}
	p.NominalY(names...)
	p.X.Min = math.Min(xMin, math.Floor(lo))
	p.X.Max = math.Ceil(hi + 0.08*(hi-p.X.Min))
	p.X.Tick.Marker = stepTicks{Step: niceStep(p.X.Max - p.X.Min)}
	p.Y.Min, p.Y.Max = -0.6, float64(n)-0.4
	return p, nil
}

// stepTicks labels every multiple of Step with an unlabelled minor tick halfway, which reads
// better on percentage axes than gonum's default of three or four labels.
type stepTicks struct{ Step float64 }

func (t stepTicks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for k := math.Ceil(lo / (t.Step / 2)); k*t.Step/2 <= hi+1e-9; k++ {
		v := k * t.Step / 2
		if math.Abs(v) < 1e-9 {
			v = 0 // no "-0" label
		}
		label := ""
		if int(k)%2 == 0 {
			label = strconv.FormatFloat(v, 'f', -1, 64)
		}
		ticks = append(ticks, plot.Tick{Value: v, Label: label})
	}
	return ticks
}

// niceStep picks 1, 2, 2.5 or 5 times a power of ten so that span shows about six labels.
func niceStep(span float64) float64 {
	raw := span / 6
	pow := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*pow >= raw {
			return m * pow
		}
	}
	return 10 * pow
}

// errorXY feeds horizontal error bars.
type errorXY []struct{ x, y, lo, hi float64 }

func (e errorXY) Len() int                    { return len(e) }
func (e errorXY) XY(i int) (float64, float64) { return e[i].x, e[i].y }
func (e errorXY) XError(i int) (float64, float64) {
	return e[i].lo, e[i].hi
}

func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, x, y
	p.Title.TextStyle.Font.Size = vg.Points(13)
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font.Size = vg.Points(11)
		a.Tick.Label.Font.Size = vg.Points(10)
	}
	p.Legend.TextStyle.Font.Size = vg.Points(10)
	g := plotter.NewGrid()
	g.Vertical.Color, g.Horizontal.Color = color.Gray{225}, color.Gray{225}
	p.Add(g)
	return p
}

// savePanels lays plots out in a grid and writes one PNG atomically.
func savePanels(path string, grid [][]*plot.Plot, w, h vg.Length) error {
	img := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(dpi), vgimg.UseBackgroundColor(color.White))
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: len(grid), Cols: len(grid[0]), PadX: vg.Points(12), PadY: vg.Points(12),
		PadTop: vg.Points(6), PadBottom: vg.Points(6), PadLeft: vg.Points(6), PadRight: vg.Points(10)}
	canvases := plot.Align(grid, tiles, dc)
	for i, row := range grid {
		for j, p := range row {
			if p != nil {
				p.Draw(canvases[i][j])
			}
		}
	}
	f, err := atomicfile.Create(path, 0o644)
	if err != nil {
		return err
	}
	defer f.Abort()
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Commit()
}
