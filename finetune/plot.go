package finetune

import (
	"encoding/json"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/schedrl/schedrl/internal/atomicfile"
)

// Curve is a run's held-out GPU allocation by environment steps.
type Curve struct {
	Label    string
	EnvSteps []int64
	AllocPct []float64
}

// ReadCurve loads the held-out evaluations of the run directory dir (start, every
// eval_every updates, end) from its newest checkpoint.
func ReadCurve(label, dir string) (Curve, error) {
	ck, err := latestCheckpoint(dir)
	if err != nil {
		return Curve{}, err
	}
	if ck == "" {
		return Curve{}, fmt.Errorf("%s: no finetune checkpoint", dir)
	}
	data, err := os.ReadFile(filepath.Join(ck, stateFile))
	if err != nil {
		return Curve{}, err
	}
	var st runState
	if err := json.Unmarshal(data, &st); err != nil {
		return Curve{}, fmt.Errorf("%s: %w", filepath.Join(ck, stateFile), err)
	}
	c := Curve{Label: label}
	if len(st.Evals) > 0 && st.Evals[0].Held.Defrag != nil {
		return Curve{}, fmt.Errorf("%s: a defrag run has no held-out GPU allocation to plot (its plans are in metrics.jsonl)", dir)
	}
	for _, e := range st.Evals {
		c.EnvSteps = append(c.EnvSteps, e.EnvSteps)
		c.AllocPct = append(c.AllocPct, e.Held.Mean)
	}
	return c, nil
}

// Reference is a horizontal line, e.g. FGD's mean on the same seeds.
type Reference struct {
	Label    string
	AllocPct float64
}

// PlotCurves draws held-out allocation against environment steps for each run, with
// reference lines, to a PNG at path (written atomically).
func PlotCurves(path, title string, curves []Curve, refs []Reference) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "environment steps"
	p.Y.Label.Text = "held-out GPU allocation at 130% arrival (%)"
	p.Legend.Top = false
	p.Legend.Left = true
	var maxX float64
	lo, hi := 100.0, 0.0
	for _, c := range curves {
		for _, y := range c.AllocPct {
			lo, hi = min(lo, y), max(hi, y)
		}
	}
	for _, r := range refs {
		lo, hi = min(lo, r.AllocPct), max(hi, r.AllocPct)
	}
	for i, c := range curves {
		pts := make(plotter.XYs, len(c.EnvSteps))
		for k := range c.EnvSteps {
			pts[k] = plotter.XY{X: float64(c.EnvSteps[k]), Y: c.AllocPct[k]}
			maxX = max(maxX, float64(c.EnvSteps[k]))
		}
		line, marks, err := plotter.NewLinePoints(pts)
		if err != nil {
			return fmt.Errorf("plot %s: %w", c.Label, err)
		}
		line.Color, marks.Color = plotutil.Color(i), plotutil.Color(i)
		marks.Shape = plotutil.Shape(i)
		p.Add(line, marks)
		p.Legend.Add(c.Label, line, marks)
	}
	for i, r := range refs {
		ref := plotter.NewFunction(func(float64) float64 { return r.AllocPct })
		ref.Color = color.Gray{Y: uint8(60 + 60*i)}
		ref.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		ref.Width = vg.Points(1)
		p.Add(ref)
		p.Legend.Add(fmt.Sprintf("%s %.2f", r.Label, r.AllocPct), ref)
	}
	p.X.Min, p.X.Max = 0, max(maxX, 1)
	p.Y.Min, p.Y.Max = lo-0.1*(hi-lo)-0.05, hi+0.1*(hi-lo)+0.05
	p.Y.Tick.Marker = plot.TickerFunc(allocTicks)
	f, err := atomicfile.Create(path, 0o644)
	if err != nil {
		return err
	}
	defer f.Abort()
	w, err := p.WriterTo(7*vg.Inch, 4.5*vg.Inch, "png")
	if err != nil {
		return err
	}
	if _, err := w.WriteTo(f); err != nil {
		return err
	}
	return f.Commit()
}

// allocTicks labels the allocation axis at a round step with as many decimals as the step
// needs: runs differ by tenths of a point, which gonum's default labels round away.
func allocTicks(lo, hi float64) []plot.Tick {
	step := 5.0
	for _, s := range []float64{0.05, 0.1, 0.2, 0.5, 1, 2} {
		if (hi-lo)/s <= 8 {
			step = s
			break
		}
	}
	decimals := max(0, int(math.Ceil(-math.Log10(step)-1e-9)))
	var ticks []plot.Tick
	for v := math.Ceil(lo/step) * step; v <= hi+1e-9; v += step {
		ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', decimals, 64)})
	}
	return ticks
}
