package fungible

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize/convex/lp"
)

// packedLP is Gavel's MaxMinFairnessPolicyWithPacking program (scheduler/policies/
// max_min_fairness.py) over classes of identical jobs (same job type and GPU count, Gavel's job
// type key): the program is symmetric in the jobs of a class, so an optimum exists in which they
// all get the same allocation, and it is enough to solve for each class's total,
//
//	maximize T  s.t.  per class c:  n_c T <= sum_g A_cg X_cg + sum_{d,g} P_c|d,g Y_cdg (x2 for d = c)
//	                                sum_g X_cg + sum_{d,g} Y_cdg (x2 for d = c) <= n_c
//	                  per type g:   sum_c gpus_c X_cg + sum_{c<=d} gpus Y_cdg <= capacity_g
//	                  X, Y, T >= 0,
//
// X_cg being the time fractions class c's jobs run alone on type g, summed over its n_c jobs, and
// Y_cdg those a job of c runs with one of d on the same GPUs (pairs of one GPU count only, as in
// Gavel). A and P are the jobs' speeds alone and paired, times their GPU count, over their
// proportional throughput (what each type's share of the cluster would give them), Gavel's
// normalisation. Gavel writes one variable per job and type key and constrains those of a key to
// be equal, a bigger program with the same optimum.
type packedLP struct {
	classes []lpClass
	pairs   []lpPair
	types   []string
	cap     []float64
}

// lpClass is one job type key's jobs: how many, their GPU count, their normalised speed alone
// on each of the LP's types (0: cannot run there).
type lpClass struct {
	n, gpus int
	alone   []float64
}

// lpPair is two classes that may share GPUs (c <= d; c = d needs two jobs of the class): each
// one's normalised paired speed on each type (both 0 where they cannot share there).
type lpPair struct {
	c, d       int
	self, peer []float64
}

// lpSolution is the optimum: per class and type the total alone fraction, per pair and type the
// total paired fraction, and the min normalised throughput T.
type lpSolution struct {
	alone  [][]float64
	paired [][]float64
	t      float64
}

// solve is the optimum: fastest's when every job fits on its fastest type at once, else simplex's.
func (p *packedLP) solve() (lpSolution, error) {
	if s, ok := p.fastest(); ok {
		return s, nil
	}
	return p.simplex()
}

// simplex builds the program in standard form (a slack per row: every row is <= with a
// non-negative bound, so the slacks are a feasible first basis) and runs gonum's simplex.
func (p *packedLP) simplex() (lpSolution, error) {
	nt := len(p.types)
	type col struct {
		pair, idx, g int // pair < 0: X of class idx; else Y of pair idx
	}
	var cols []col
	for c, cl := range p.classes {
		for g := range nt {
			if cl.alone[g] > 0 {
				cols = append(cols, col{-1, c, g})
			}
		}
	}
	for k, pr := range p.pairs {
		for g := range nt {
			if pr.self[g] > 0 && pr.peer[g] > 0 {
				cols = append(cols, col{1, k, g})
			}
		}
	}
	nc := len(p.classes)
	rows := 2*nc + nt
	vars := 1 + len(cols) + rows
	a := mat.NewDense(rows, vars, nil)
	b := make([]float64, rows)
	cost := make([]float64, vars)
	cost[0] = -1
	// Rows: throughput of class c at c, time of class c at nc+c, capacity of type g at 2nc+g.
	for c, cl := range p.classes {
		a.Set(c, 0, float64(cl.n))
		b[nc+c] = float64(cl.n)
	}
	for g := range nt {
		b[2*nc+g] = p.cap[g]
	}
	for k, cv := range cols {
		j := 1 + k
		if cv.pair < 0 {
			cl := p.classes[cv.idx]
			a.Set(cv.idx, j, -cl.alone[cv.g])
			a.Set(nc+cv.idx, j, 1)
			a.Set(2*nc+cv.g, j, float64(cl.gpus))
			continue
		}
		pr := p.pairs[cv.idx]
		if pr.c == pr.d {
			a.Set(pr.c, j, -2*pr.self[cv.g])
			a.Set(nc+pr.c, j, 2)
		} else {
			a.Set(pr.c, j, -pr.self[cv.g])
			a.Set(pr.d, j, -pr.peer[cv.g])
			a.Set(nc+pr.c, j, 1)
			a.Set(nc+pr.d, j, 1)
		}
		a.Set(2*nc+cv.g, j, float64(p.classes[pr.c].gpus))
	}
	basic := make([]int, rows)
	for r := range rows {
		a.Set(r, 1+len(cols)+r, 1)
		basic[r] = 1 + len(cols) + r
	}
	opt, x, err := lp.Simplex(cost, a, b, 1e-10, basic)
	if err != nil {
		return lpSolution{}, fmt.Errorf("max-min LP (%d classes, %d pairs): %w", nc, len(p.pairs), err)
	}
	s := lpSolution{alone: make([][]float64, nc), paired: make([][]float64, len(p.pairs)), t: -opt}
	for c := range s.alone {
		s.alone[c] = make([]float64, nt)
	}
	for k := range s.paired {
		s.paired[k] = make([]float64, nt)
	}
	for k, cv := range cols {
		v := max(x[1+k], 0)
		if cv.pair < 0 {
			s.alone[cv.idx][cv.g] = v
		} else {
			s.paired[cv.idx][cv.g] = v
		}
	}
	return s, nil
}

// fastest is the optimum when every class fits on its fastest type all the time: no job can do
// better than its speed alone on its fastest type (no pair of the vendored table runs faster
// than alone, and a pair's half share of CPUs and memory only slows it), so every job gets its
// own maximum, the min among them included. It spares the simplex whenever the cluster is not
// contended.
func (p *packedLP) fastest() (lpSolution, bool) {
	nt := len(p.types)
	use := make([]float64, nt)
	s := lpSolution{alone: make([][]float64, len(p.classes)), paired: make([][]float64, len(p.pairs)), t: math.Inf(1)}
	for c, cl := range p.classes {
		best := 0
		for g := range nt {
			if cl.alone[g] > cl.alone[best] {
				best = g
			}
		}
		use[best] += float64(cl.n * cl.gpus)
		if use[best] > p.cap[best] || cl.alone[best] <= 0 {
			return lpSolution{}, false
		}
		s.alone[c] = make([]float64, nt)
		s.alone[c][best] = float64(cl.n)
		s.t = min(s.t, cl.alone[best])
	}
	for k := range s.paired {
		s.paired[k] = make([]float64, nt)
	}
	return s, true
}
