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
