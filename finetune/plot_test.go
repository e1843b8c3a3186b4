package finetune

import (
	"image/png"
	"os"
	"path/filepath"
	"testing"
)

func TestPlotCurvesWritesPNG(t *testing.T) {
	path := filepath.Join(t.TempDir(), "curves.png")
	curves := []Curve{
		{Label: "warm", EnvSteps: []int64{0, 1000, 2000}, AllocPct: []float64{95.3, 95.4, 95.5}},
		{Label: "scratch", EnvSteps: []int64{0, 1000, 2000}, AllocPct: []float64{92.7, 93.1, 93.9}},
	}
	if err := PlotCurves(path, "test", curves, []Reference{{Label: "fgd", AllocPct: 95.44}}); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() < 300 || b.Dy() < 200 {
		t.Fatalf("image is %v", b)
	}
}

func TestReadCurveNeedsACheckpoint(t *testing.T) {
	if _, err := ReadCurve("x", t.TempDir()); err == nil {
		t.Fatal("a directory without checkpoints gave a curve")
	}
}

// Allocation ticks keep the decimals their step needs: runs differ by tenths of a point.
func TestAllocTicks(t *testing.T) {
	for _, tc := range []struct {
		lo, hi      float64
		first, last string
		n           int
	}{
		{95.22, 95.56, "95.25", "95.55", 7},
		{89.5, 95.6, "90", "95", 6},
		{94.0, 95.2, "94.0", "95.2", 7},
	} {
		ticks := allocTicks(tc.lo, tc.hi)
		if len(ticks) != tc.n || ticks[0].Label != tc.first || ticks[len(ticks)-1].Label != tc.last {
			t.Errorf("%v..%v: %d ticks %q..%q, want %d %q..%q", tc.lo, tc.hi, len(ticks), ticks[0].Label, ticks[len(ticks)-1].Label, tc.n, tc.first, tc.last)
		}
	}
}
