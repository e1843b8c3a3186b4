package jobs

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize/convex/lp"
)

// simplexOptimum solves the same LP with gonum's simplex, as the reference optimum.
func simplexOptimum(t *testing.T, a [][NumGPUs]float64, scale []float64, capacity [NumGPUs]float64, n int) float64 {
	m := len(a)
	// Variables: x (m*n), t+, slack per inequality (m rows, n capacities, m fairness).
	nv := m*n + 1 + m + n + m
	A := mat.NewDense(m+n+m, nv, nil)
	b := make([]float64, m+n+m)
	for i := range m {
		for g := range n {
			A.Set(i, i*n+g, 1)
			A.Set(m+g, i*n+g, scale[i])
			A.Set(m+n+i, i*n+g, -a[i][g])
		}
		A.Set(m+n+i, m*n, 1)
		b[i] = 1
	}
	for g := range n {
		b[m+g] = capacity[g]
	}
	for r := range m + n + m {
		A.Set(r, m*n+1+r, 1)
	}
	c := make([]float64, nv)
	c[m*n] = -1
	opt, _, err := lp.Simplex(c, A, b, 1e-10, nil)
	if err != nil {
		t.Fatalf("simplex: %v", err)
	}
	return -opt
}

func TestMaxMinLPMatchesSimplexOptimum(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 40 {
		n := 1 + trial%3
		m := 1 + rng.IntN(30)
		s := maxMinLP{n: n}
		for g := range n {
			s.cap[g] = float64(1 + rng.IntN(12))
		}
		for range m {
			var row [NumGPUs]float64
			for g := range n {
				row[g] = rng.Float64() * 3
			}
			s.a = append(s.a, row)
			s.scale = append(s.scale, float64([]int{1, 1, 2, 4, 8}[rng.IntN(5)]))
		}
		x, opt := s.solve()
		want := simplexOptimum(t, s.a, s.scale, s.cap, n)
		if math.Abs(opt-want) > 1e-6*math.Max(1, want) {
			t.Errorf("trial %d (m=%d n=%d): interior point t=%g, simplex %g", trial, m, n, opt, want)
		}
		for i := range m {
			f := 0.0
			for g := range n {
				f += s.a[i][g] * x[i][g]
			}
			if f < want*(1-1e-6)-1e-9 {
				t.Errorf("trial %d: job %d gets %g < optimum %g", trial, i, f, want)
			}
		}
	}
}

// Identical jobs get identical allocations (the analytic centre of the optimal face), where
// any split of the time among them would be optimal.
func TestMaxMinLPIdenticalJobsShareEvenly(t *testing.T) {
	s := maxMinLP{n: 3, cap: [NumGPUs]float64{2, 2, 2}}
	for range 4 {
		s.a = append(s.a, [NumGPUs]float64{1, 1, 1})
		s.scale = append(s.scale, 1)
	}
	x, opt := s.solve()
	if math.Abs(opt-1) > 1e-7 {
		t.Fatalf("optimum %g, want 1", opt)
	}
	for i := range x {
		for g := range 3 {
			if math.Abs(x[i][g]-x[0][g]) > 1e-9 || math.Abs(x[i][g]-1.0/3) > 1e-6 {
				t.Fatalf("job %d allocation %v, want 1/3 on each type like job 0's %v", i, x[i], x[0])
			}
		}
	}
}

// A solve of an LP solved before returns the stored solution, bit for bit what a fresh solver
// gives, and an LP that differs only in a class's number of jobs is solved anew.
func TestMaxMinLPReusesSolutionOfSameInputs(t *testing.T) {
	c := Cluster{GPUs: [NumGPUs]int{4, 2, 2}}
	types := []GPU{0, 1, 2}
	rows := [][NumGPUs]float64{{1, 2, 3}, {2, 2, 1}, {1, 2, 3}, {0.5, 4, 1}, {1, 2, 3}} // jobs 0, 2 and 4: one class
	lp := func(s *maxMinLP, m int) ([][NumGPUs]float64, float64) {
		s.setup(types, c, true, m, func(i int) ([NumGPUs]float64, int, float64) {
			return rows[i], 1 + i%2, 1
		})
		x, opt := s.solve()
		return slices.Clone(x), opt
	}
	var s maxMinLP
	x5, t5 := lp(&s, 5)
	x4, t4 := lp(&s, 4)
	if t4 == t5 {
		t.Fatalf("4 and 5 jobs share the optimum %g: the second LP was not solved", t4)
	}
	again, tAgain := lp(&s, 5)
	if len(s.known) != 2 {
		t.Fatalf("%d stored solutions after solving two LPs, want 2", len(s.known))
	}
	var fresh maxMinLP
	want, tWant := lp(&fresh, 5)
	if tAgain != tWant || t5 != tWant || !slices.Equal(again, want) || !slices.Equal(x5, want) {
		t.Fatalf("re-solve gives t=%v %v, fresh solver t=%v %v", tAgain, again, tWant, want)
	}
	if slices.Equal(x4[:4], want[:4]) {
		t.Fatalf("4 jobs got the 5-job allocation %v", x4)
	}
}

// The closed-form inverse of a class's block is its inverse to rounding, on clusters of one to
// three types and across the 24 orders of magnitude its diagonal spans between the first and
// the last Newton steps: K inv = I entry by entry, relative to the size of the products summed.
func TestBlockInverseInvertsTheBlock(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	scale := func() float64 { return math.Pow(10, -12+24*rng.Float64()) }
	for trial := range 6000 {
		n := 1 + trial%NumGPUs
		var c, a [NumGPUs]float64
		for g := range n {
			c[g], a[g] = scale(), 3*rng.Float64()
		}
		if trial%4 == 0 {
			a[1] = a[0] // equal rows on two types (max_min_fairness: on all)
		}
		rho, phi := scale(), scale()
		var k, inv [blockSize][blockSize]float64
		for g := range n {
			k[g][g] = 1 / c[g]
			k[g][tr], k[tr][g] = 1, 1
			k[g][fr], k[fr][g] = a[g], a[g]
		}
		for g := n; g < NumGPUs; g++ {
			k[g][g] = 1
		}
		k[tr][tr], k[fr][fr] = -rho, -phi
		blockInverse(&c, &a, rho, phi, n, &inv)
		for r := range blockSize {
			for col := range blockSize {
				sum, size := 0.0, 0.0
				for m := range blockSize {
					sum += k[r][m] * inv[m][col]
					size += math.Abs(k[r][m] * inv[m][col])
				}
				if r == col {
					sum--
				}
				if math.Abs(sum) > 1e-14*math.Max(size, 1) {
					t.Fatalf("trial %d (%d types): (K inv)[%d][%d] - I = %g (products of size %g); c %v a %v rho %g phi %g",
						trial, n, r, col, sum, size, c, a, rho, phi)
				}
			}
		}
	}
}
