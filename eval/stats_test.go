package eval

import (
	"math"
	"testing"
)

func TestTQuantile975(t *testing.T) {
	// Values from any Student t table.
	for _, tc := range []struct {
		df   int
		want float64
	}{{1, 12.7062}, {2, 4.3027}, {4, 2.7764}, {9, 2.2622}, {30, 2.0423}, {1000, 1.9623}} {
		if got := tQuantile975(tc.df); math.Abs(got-tc.want) > 5e-4 {
			t.Errorf("t(0.975, %d) = %.4f, want %.4f", tc.df, got, tc.want)
		}
	}
}

func TestSummarize(t *testing.T) {
	for _, tc := range []struct {
		name            string
		xs              []float64
		mean, std, half float64
	}{
		{"empty", nil, 0, 0, 0},
		{"one seed has no spread", []float64{93.1}, 93.1, 0, 0},
		{"identical seeds", []float64{5, 5, 5}, 5, 0, 0},
		// mean 3, s = sqrt(2.5), half = t(0.975,4) * s / sqrt(5)
		{"five seeds", []float64{1, 2, 3, 4, 5}, 3, math.Sqrt(2.5), 2.776445 * math.Sqrt(2.5) / math.Sqrt(5)},
		{"two seeds", []float64{90, 92}, 91, math.Sqrt2, 12.7062 * math.Sqrt2 / math.Sqrt2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Summarize(tc.xs)
			if s.N != len(tc.xs) || math.Abs(s.Mean-tc.mean) > 1e-9 || math.Abs(s.Std-tc.std) > 1e-9 ||
				math.Abs(s.HalfWidth-tc.half) > 1e-3 {
				t.Fatalf("Summarize(%v) = %+v, want mean %v std %v half %v", tc.xs, s, tc.mean, tc.std, tc.half)
			}
			if math.Abs(s.Low-(s.Mean-s.HalfWidth)) > 1e-12 || math.Abs(s.High-(s.Mean+s.HalfWidth)) > 1e-12 {
				t.Fatalf("interval [%v, %v] is not mean ± half-width", s.Low, s.High)
			}
		})
	}
}

func TestPercentile(t *testing.T) {
	xs := make([]float64, 100)
	for i := range xs {
		xs[i] = float64(100 - i) // 100..1, unsorted on purpose
	}
	for _, tc := range []struct{ p, want float64 }{{50, 50}, {99, 99}, {100, 100}, {0, 1}, {1, 1}} {
		if got := Percentile(xs, tc.p); got != tc.want {
			t.Errorf("p%v = %v, want %v", tc.p, got, tc.want)
		}
	}
	if got := Percentile(nil, 99); got != 0 {
		t.Errorf("p99 of nothing = %v, want 0", got)
	}
}

func TestPairSeeds(t *testing.T) {
	for _, tc := range []struct {
		name               string
		xs, base           []float64
		mean               float64
		wins, ties, losses int
		verdict            string
	}{
		// The workloads differ by 5 points, the policies by a steady 0.1: the means' intervals
		// overlap widely, the paired one excludes zero.
		{"steady gain", []float64{90.1, 95.2, 93.1, 91.1}, []float64{90, 95, 93, 91}, 0.125, 4, 0, 0, "higher"},
		{"steady loss", []float64{89.9, 94.9, 92.9}, []float64{90, 95, 93}, -0.1, 0, 0, 3, "lower"},
		{"mixed", []float64{90.2, 94.8, 93}, []float64{90, 95, 93}, 0, 1, 1, 1, "no difference shown"},
		{"one seed proves nothing", []float64{91}, []float64{90}, 1, 1, 0, 0, "no difference shown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := PairSeeds("fgd", tc.xs, tc.base)
			if math.Abs(p.Diff.Mean-tc.mean) > 1e-9 || p.Wins != tc.wins || p.Ties != tc.ties ||
				p.Losses != tc.losses || p.Verdict() != tc.verdict || p.Baseline != "fgd" {
				t.Fatalf("pairSeeds = %+v (verdict %q)", p, p.Verdict())
			}
		})
	}
}
