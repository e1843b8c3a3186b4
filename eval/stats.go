package eval

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// Summary is a metric over seeds: the mean and its two-sided 95% confidence interval.
// The interval uses Student's t with n-1 degrees of freedom, because five or ten seeds are far
// too few for the normal approximation; with one seed the interval collapses to the mean.
type Summary struct {
	Mean      float64 `json:"mean"`
	Std       float64 `json:"std"` // sample standard deviation (n-1)
	HalfWidth float64 `json:"ci95_half_width"`
	Low       float64 `json:"ci95_low"`
	High      float64 `json:"ci95_high"`
	N         int     `json:"n"`
}

// Summarize computes the mean and 95% CI of xs.
func Summarize(xs []float64) Summary {
	n := len(xs)
	if n == 0 {
		return Summary{}
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	s := Summary{N: n, Mean: sum / float64(n)}
	if n > 1 {
		var ss float64
		for _, x := range xs {
			ss += (x - s.Mean) * (x - s.Mean)
		}
		s.Std = math.Sqrt(ss / float64(n-1))
		s.HalfWidth = tQuantile975(n-1) * s.Std / math.Sqrt(float64(n))
	}
	s.Low, s.High = s.Mean-s.HalfWidth, s.Mean+s.HalfWidth
	return s
}

// tQuantile975 is the 97.5th percentile of Student's t with df degrees of freedom.
func tQuantile975(df int) float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(df)}.Quantile(0.975)
}

// Percentile returns the p-th percentile (0..100) of xs by the nearest-rank method, which
// reports a latency that some decision actually had. xs is sorted in place.
func Percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	rank := int(math.Ceil(p / 100 * float64(len(xs))))
	return xs[min(max(rank, 1), len(xs))-1]
}

// Paired compares a policy with the baseline seed by seed on the same workloads. Most of a
// seed's variance is its workload's, shared by both policies, so the interval of the mean
// difference is far tighter than the two means' intervals: it tells a 0.1-point gain from noise.
type Paired struct {
	Baseline string  `json:"baseline"`
	Diff     Summary `json:"diff"` // policy − baseline, per seed
	Wins     int     `json:"wins"` // seeds where the policy is higher
	Ties     int     `json:"ties"`
	Losses   int     `json:"losses"`
}

// PairSeeds summarises xs − base seed by seed; both hold the same seeds in the same order.
func PairSeeds(baseline string, xs, base []float64) *Paired {
	p := &Paired{Baseline: baseline}
	diffs := make([]float64, len(xs))
	for i := range xs {
		diffs[i] = xs[i] - base[i]
		switch {
		case math.Abs(diffs[i]) < 1e-9:
			p.Ties++
		case diffs[i] > 0:
			p.Wins++
		default:
			p.Losses++
		}
	}
	p.Diff = Summarize(diffs)
	return p
}

// Verdict reads the interval: "higher" or "lower" when it excludes zero.
func (p *Paired) Verdict() string {
	switch {
	case p.Diff.N > 1 && p.Diff.Low > 0:
		return "higher"
	case p.Diff.N > 1 && p.Diff.High < 0:
		return "lower"
	}
	return "no difference shown"
}
