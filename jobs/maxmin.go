package jobs

import (
	"encoding/binary"
	"math"
	"slices"
)

// maxMinLP solves the linear program behind Gavel's max-min fairness policies,
//
//	maximize t  s.t.  sum_g a[i][g] x[i][g] >= t,  sum_g x[i][g] <= 1,
//	                  sum_i scale[i] x[i][g] <= capacity[g],  x >= 0,
//
// over the GPU types g < n, with a primal-dual interior-point method whose Newton steps exploit
// the structure (a small block per class of identical jobs, coupled only through t and the n
// capacity rows), so a step costs O(classes). The optimum is rarely unique (identical jobs can trade time on GPU
// types); like the interior-point solver Gavel calls (ECOS through cvxpy), this one follows the
// central path and so ends near the analytic centre of the optimal face: identical jobs get
// identical allocations, as in Gavel, where a simplex vertex would pick one arbitrarily.
type maxMinLP struct {
	a     [][NumGPUs]float64 // per class of identical jobs
	scale []float64
	mult  []float64 // jobs in the class (nil: one each)
	class []int     // job -> class (nil: job i is class i)
	cap   [NumGPUs]float64
	n     int
	out   [][NumGPUs]float64
	x     [][NumGPUs]float64 // the solution per class
	rows  map[[NumGPUs + 1]float64]int
	key   []byte
	known map[string]lpSolution // solutions by their LP's exact inputs (see solve)

	pt, aff, step pdPoint   // the iterate, the predictor and the step
	work          []lpClass // per class: what the Newton steps share
	schur         [NumGPUs + 1][blockSize]float64
	rq            [NumGPUs]float64 // capacity residuals
	rt            float64          // the dual row of t
}

// lpClass is one class's data for the Newton steps, in one place so that a pass over the
// classes reads one record per class: its constants, then what advance sets at the current
// point.
type lpClass struct {
	a        [NumGPUs]float64
	mult, ms float64                       // jobs, and jobs times scale
	kinv     [blockSize][blockSize]float64 // its block's inverse
	base     [blockSize]float64            // its block's solution without the coupling terms
	rd       [NumGPUs]float64              // the dual rows of x
	rr, rf   float64                       // time and fairness row residuals
	ix, iz   [NumGPUs]float64              // 1/x, 1/z, 1/y, 1/v, 1/r and 1/f (products are
	iy, iv   float64                       // cheaper than the divisions they save)
	ir, iff  float64
}

// Identical jobs (same row and scale) form one class with a multiplicity: on the central path
// they have identical allocations anyway, so each class's complementarity targets are weighted
// by its number of jobs (the central path of the problem with every job written out).
//
// setup loads Gavel's MaxMinFairnessPolicyWithPerf program for m jobs on the cluster's types:
// job i's row is its throughputs times scale / (priority weight x proportional throughput),
// the proportional throughput being what it would get with each type's share of the cluster.
// Without perf (max_min_fairness) every throughput is 1.
func (s *maxMinLP) setup(types []GPU, c Cluster, perf bool, m int, job func(i int) (tput [NumGPUs]float64, scale int, weight float64)) {
	s.n = len(types)
	s.a, s.scale, s.mult, s.class = s.a[:0], s.scale[:0], s.mult[:0], s.class[:0]
	if s.rows == nil {
		s.rows = map[[NumGPUs + 1]float64]int{}
	}
	clear(s.rows)
	total := 0.0
	for k, g := range types {
		s.cap[k] = float64(c.GPUs[g])
		total += s.cap[k]
	}
	for i := range m {
		tput, scale, weight := job(i)
		var row [NumGPUs]float64
		prop := 0.0
		for k, g := range types {
			row[k] = 1
			if perf {
				row[k] = tput[g]
			}
			prop += row[k] * s.cap[k] / total
		}
		var key [NumGPUs + 1]float64
		for k := range types {
			row[k] *= float64(scale) / (weight * prop)
			key[k] = row[k]
		}
		key[NumGPUs] = float64(scale)
		c, ok := s.rows[key]
		if !ok {
			c = len(s.a)
			s.rows[key] = c
			s.a = append(s.a, row)
			s.scale = append(s.scale, float64(scale))
			s.mult = append(s.mult, 0)
		}
		s.mult[c]++
		s.class = append(s.class, c)
	}
}

// solve returns the allocation, clipped to [0, 1] as Gavel clips cvxpy's, and the optimum t.
//
// It is a primal-dual interior-point method (Mehrotra's predictor-corrector): about 15-25
// steps where a primal barrier method needs 40-55. Its last iterates are re-centred, so the
// answer is the central path's point at a duality gap of 1e-9 t, that is the analytic centre
// of the optimal face up to that gap, whatever the path took there. Each class's terms count
// once per job (weight mult), so the path is the one of the problem with every job written out.
func (s *maxMinLP) solve() ([][NumGPUs]float64, float64) {
	m, n := len(s.a), s.n
	if len(s.mult) != m {
		s.mult, s.class = s.mult[:0], s.class[:0]
		for i := range m {
			s.mult = append(s.mult, 1)
			s.class = append(s.class, i)
		}
	}
	if x, t, ok := s.recall(); ok {
		return s.expand(x), t
	}
	s.alloc(m)
	s.start()
	barriers := float64(n)
	for i := range m {
		barriers += s.mult[i] * float64(n+2)
	}
	centring := 0
	worst, gap := s.advance(nil, 0, 0)
	for iter := 0; iter < 200; iter++ {
		nu := gap / barriers
		converged := worst <= 1e-9 && gap <= 1e-9*math.Max(1, math.Abs(s.pt.t))
		var ap, ad float64
		if converged {
			if s.centrality(nu) <= 1e-3 || centring == 8 {
				break
			}
			centring++
			ap, ad = s.direction(&s.step, nu, nil)
		} else {
			// Predictor: the affine direction towards gap 0; its gap says how far to centre.
			ap, ad = s.direction(&s.aff, 0, nil)
			nuAff := s.gapAfter(&s.aff, ap, ad) / barriers
			sigma := math.Pow(nuAff/nu, 3)
			ap, ad = s.direction(&s.step, sigma*nu, &s.aff)
		}
		worst, gap = s.advance(&s.step, math.Min(1, 0.99*ap), math.Min(1, 0.99*ad))
	}
	s.x = grow(s.x, m)
	for i := range s.x {
		s.x[i] = s.pt.c[i].x
	}
	s.remember(s.x, s.pt.t)
	return s.expand(s.x), s.pt.t
}

// expand gives each job its class's allocation, clipped to [0, 1].
func (s *maxMinLP) expand(x [][NumGPUs]float64) [][NumGPUs]float64 {
	s.out = grow(s.out, len(s.class))
	for i, c := range s.class {
		for g := range s.n {
			s.out[i][g] = math.Min(1, math.Max(0, x[c][g]))
		}
	}
	return s.out
}

// The same LP comes back often (a job finishes and one of the same class arrives; without
// perf every job of a scale has the same row): its classes' rows, scales and multiplicities
// and the capacities determine the whole solve, so the stored solution is bit for bit the one
// solving it again would give.
type lpSolution struct {
	x [][NumGPUs]float64
	t float64
}

// maxKnown bounds the stored solutions; past it the store starts again.
const maxKnown = 4096

// recall builds the key of the loaded LP and returns its stored solution, if any.
func (s *maxMinLP) recall() ([][NumGPUs]float64, float64, bool) {
	s.key = s.key[:0]
	put := func(v float64) { s.key = binary.LittleEndian.AppendUint64(s.key, math.Float64bits(v)) }
	put(float64(s.n))
	for g := range s.n {
		put(s.cap[g])
	}
	for i := range s.a {
		for g := range s.n {
			put(s.a[i][g])
		}
		put(s.scale[i])
		put(s.mult[i])
	}
	sol, ok := s.known[string(s.key)]
	return sol.x, sol.t, ok
}

// remember stores the solution of the LP recall last keyed.
func (s *maxMinLP) remember(x [][NumGPUs]float64, t float64) {
	if s.known == nil || len(s.known) == maxKnown {
		s.known = map[string]lpSolution{}
	}
	s.known[string(s.key)] = lpSolution{slices.Clone(x), t}
}

// pdPoint is a primal-dual point, or a direction: per class the allocation x (dual z), the
// time-row slack r (dual y) and the fairness slack f (dual v); per type the capacity slack q
// (dual u); and t.
type pdPoint struct {
	c    []pdClass
	q, u [NumGPUs]float64
	t    float64
}

type pdClass struct {
	x, z       [NumGPUs]float64
	r, y, f, v float64
}

func (p *pdPoint) alloc(m int) {
	p.c = slices.Grow(p.c[:0], m)[:m]
}

func grow(v [][NumGPUs]float64, m int) [][NumGPUs]float64 {
	if cap(v) < m {
		return make([][NumGPUs]float64, m)
	}
	return v[:m]
}

func (s *maxMinLP) alloc(m int) {
	s.pt.alloc(m)
	s.aff.alloc(m)
	s.step.alloc(m)
	s.work = slices.Grow(s.work[:0], m)[:m]
	for i := range s.work {
		w := &s.work[i]
		w.a, w.mult, w.ms = s.a[i], s.mult[i], s.mult[i]*s.scale[i]
	}
}

// start is a primal-feasible point: every job gets the same share of each type, in proportion
// to the type's size, at half of what would fill either the cluster or the job's time, and t
// half the least fairness; the duals are the barrier's at the weight that makes sum v = 1.
func (s *maxMinLP) start() {
	n := s.n
	p := &s.pt
	total, demand := 0.0, 0.0
	for g := range n {
		total += s.cap[g]
	}
	for _, w := range s.work {
		demand += w.ms
	}
	alpha := 0.5 * math.Min(1, total/demand)
	minF := math.Inf(1)
	for i := range p.c {
		c, f := &p.c[i], 0.0
		for g := range n {
			c.x[g] = alpha * s.cap[g] / total
			f += s.work[i].a[g] * c.x[g]
		}
		minF = math.Min(minF, f)
	}
	p.t = minF - 1
	if minF > 0 {
		p.t = 0.5 * minF
	}
	p.q = s.cap
	tau := 0.0
	for i := range p.c {
		c, w := &p.c[i], &s.work[i]
		c.r, c.f = 1, -p.t
		for g := range n {
			c.r -= c.x[g]
			c.f += w.a[g] * c.x[g]
			p.q[g] -= w.ms * c.x[g]
		}
		tau += w.mult / c.f
	}
	for i := range p.c {
		c := &p.c[i]
		mu := s.work[i].mult / tau
		c.y, c.v = mu/c.r, mu/c.f
		for g := range n {
			c.z[g] = mu / c.x[g]
		}
	}
	for g := range n {
		p.u[g] = 1 / (tau * p.q[g])
	}
}

// gapAfter is the duality gap (sum of every slack times its dual) after primal step ap and
// dual step ad along d.
func (s *maxMinLP) gapAfter(d *pdPoint, ap, ad float64) float64 {
	p, n := &s.pt, min(s.n, NumGPUs)
	dc := d.c[:len(p.c)]
	gap := 0.0
	for i := range p.c {
		c, dd := &p.c[i], &dc[i]
		for g := range n {
			gap += (c.x[g] + ap*dd.x[g]) * (c.z[g] + ad*dd.z[g])
		}
		gap += (c.r+ap*dd.r)*(c.y+ad*dd.y) + (c.f+ap*dd.f)*(c.v+ad*dd.v)
	}
	for g := range n {
		gap += (p.q[g] + ap*d.q[g]) * (p.u[g] + ad*d.u[g])
	}
	return gap
}

// centrality is the largest relative distance of a slack-dual product from its central
// value (the weight times nu).
func (s *maxMinLP) centrality(nu float64) float64 {
	p, n := &s.pt, s.n
	worst := 0.0
	dev := func(prod, w float64) { worst = max(worst, math.Abs(prod/(w*nu)-1)) }
	for i := range p.c {
		c, mu := &p.c[i], s.work[i].mult
		for g := range n {
			dev(c.x[g]*c.z[g], mu)
		}
		dev(c.r*c.y, mu)
		dev(c.f*c.v, mu)
	}
	for g := range n {
		dev(p.q[g]*p.u[g], 1)
	}
	return worst
}

// advance moves the point by primal step ap and dual step ad along d, when d is given, then
// computes the equality residuals there (time rows, fairness rows, the dual rows of x,
// capacities, the dual row of t) and returns the largest, capacities relative to their size,
// and the duality gap (in the order gapAfter sums it); and factors the Newton system there,
// which every step but a solve's last needs. One pass over the classes does all three.
func (s *maxMinLP) advance(d *pdPoint, ap, ad float64) (worst, gap float64) {
	p, n := &s.pt, min(s.n, NumGPUs)
	if d != nil {
		for g := range n {
			p.q[g] += ap * d.q[g]
			p.u[g] += ad * d.u[g]
		}
		p.t += ap * d.t
	}
	// The capacity residuals summed in registers, over all NumGPUs types (a type the cluster
	// lacks gets a sum that is not read).
	rq0, rq1, rq2, rt := s.cap[0], s.cap[1], s.cap[2], 1.0
	// The Schur system's sums, in registers: its upper triangle over the types, its t column
	// and its t entry, over all NumGPUs types (those the cluster lacks are not read).
	var s00, s01, s02, s11, s12, s22, s0t, s1t, s2t, stt float64
	w := s.work[:len(p.c)]
	for i := range p.c {
		c, k := &p.c[i], &w[i]
		if d != nil {
			dd := &d.c[i]
			for g := range n {
				c.x[g] += ap * dd.x[g]
				c.z[g] += ad * dd.z[g]
			}
			c.r += ap * dd.r
			c.f += ap * dd.f
			c.y += ad * dd.y
			c.v += ad * dd.v
		}
		ms := k.ms
		rr, rf := 1-c.r, -c.f-p.t
		for g := range n {
			gap += c.x[g] * c.z[g]
			rr -= c.x[g]
			rf += k.a[g] * c.x[g]
			rd := c.z[g] - c.y + k.a[g]*c.v - ms*p.u[g]
			k.rd[g] = rd
			worst = larger(worst, math.Abs(rd))
		}
		gap += c.r*c.y + c.f*c.v
		rq0, rq1, rq2 = rq0-ms*c.x[0], rq1-ms*c.x[1], rq2-ms*c.x[2]
		k.rr, k.rf = rr, rf
		worst = larger(larger(worst, math.Abs(rr)), math.Abs(rf))
		rt -= c.v
		t00, t01, t02, t11, t12, t22, t0t, t1t, t2t, ttt := factorClass(c, k, n)
		s00, s01, s02, s11, s12, s22 = s00+t00, s01+t01, s02+t02, s11+t11, s12+t12, s22+t22
		s0t, s1t, s2t, stt = s0t-t0t, s1t-t1t, s2t-t2t, stt-ttt
	}
	rq := [NumGPUs]float64{rq0, rq1, rq2}
	for g := range n {
		gap += p.q[g] * p.u[g]
		rq[g] -= p.q[g]
		worst = max(worst, math.Abs(rq[g])/max(1, s.cap[g]))
	}
	s.rq, s.rt = rq, rt
	// The inverses are symmetric, so is the Schur system.
	tri := [NumGPUs][NumGPUs]float64{{s00, s01, s02}, {s01, s11, s12}, {s02, s12, s22}}
	col := [NumGPUs]float64{s0t, s1t, s2t}
	var schur [NumGPUs + 1][blockSize]float64
	for g := range n {
		for h := range n {
			schur[g][h] = tri[g][h]
		}
		schur[g][n], schur[n][g] = col[g], -col[g]
		schur[g][g] += p.q[g] / p.u[g]
	}
	schur[n][n] = stt
	s.schur = schur
	return max(worst, math.Abs(rt)), gap
}

// larger and smaller are max and min for numbers that are not NaN (the builtins also order
// NaN and signed zeros, at several instructions each in the hot loops).
func larger(x, y float64) float64 {
	if y > x {
		return y
	}
	return x
}

func smaller(x, y float64) float64 {
	if y < x {
		return y
	}
	return x
}

// The factorization at a point (advance) is each class's block inverse and the Schur system
// over the capacity duals and t that couples the classes; directions then differ only in
// their right-hand sides. A class's block is the quasi-definite system in (dx, dy, -dv),
//
//	[Z/X  1    a  ]
//	[1'  -r/y  0  ]
//	[a'   0   -f/v],
//
// not its normal form Z/X + (y/r) 11' + (v/f) aa': near the optimum y/r and v/f grow without
// bound while Z/X of the allocations the optimum leaves free vanishes, and the normal form
// would lose those (the directions that centre the allocation on the optimal face) to rounding.
// A class's block: its allocation on each type (padded to NumGPUs), then its time row (tr)
// and its fairness row (fr).
const (
	tr        = NumGPUs
	fr        = NumGPUs + 1
	blockSize = NumGPUs + 2
)

// factorClass sets a class's reciprocals and block inverse at the current point and returns
// its terms of the Schur system: ms^2 kinv over the types' upper triangle, ms kinv[:, fr] and
// kinv[fr][fr] (for a type the cluster lacks, terms that are not read).
func factorClass(pc *pdClass, k *lpClass, n int) (t00, t01, t02, t11, t12, t22, t0t, t1t, t2t, ttt float64) {
	n = min(n, NumGPUs)
	k.iy, k.iv, k.ir, k.iff = 1/pc.y, 1/pc.v, 1/pc.r, 1/pc.f
	var c [NumGPUs]float64
	for g := range n {
		k.ix[g], k.iz[g] = 1/pc.x[g], 1/pc.z[g]
		c[g] = pc.x[g] * k.iz[g]
	}
	inv := &k.kinv
	blockInverse(&c, &k.a, pc.r*k.iy, pc.f*k.iv, n, inv)
	ms := k.ms
	ms2 := ms * ms
	return ms2 * inv[0][0], ms2 * inv[0][1], ms2 * inv[0][2], ms2 * inv[1][1], ms2 * inv[1][2], ms2 * inv[2][2],
		ms * inv[0][fr], ms * inv[1][fr], ms * inv[2][fr], inv[fr][fr]
}

// direction solves the Newton system for complementarity target nu x weight, less the
// second-order term of the affine direction aff when given (Mehrotra's corrector), into d,
// and returns the largest primal and dual steps along d that keep every slack and dual
// non-negative: one over the largest -dv/v, from the reciprocals factor kept (no division
// per entry).
func (s *maxMinLP) direction(d *pdPoint, nu float64, aff *pdPoint) (ap, ad float64) {
	p, n := &s.pt, min(s.n, NumGPUs)
	sys := s.schur
	var rhs0 [NumGPUs]float64 // the Schur system's right-hand side, summed in registers below
	for g := range n {
		k := nu - p.q[g]*p.u[g]
		if aff != nil {
			k -= aff.q[g] * aff.u[g]
		}
		rhs0[g] = k/p.u[g] - s.rq[g]
	}
	// A type the cluster lacks has an identity row in every block and a zero right-hand side,
	// so its sum stays 0 and is not read.
	sum0, sum1, sum2, sumT := rhs0[0], rhs0[1], rhs0[2], s.rt
	// Each class's block solved for its right-hand side without the du and dt terms (base);
	// the full solution is base - ms sum_h du_h kinv[:, h] + dt kinv[:, fr].
	w, dc := s.work[:len(p.c)], d.c[:len(p.c)]
	for i := range p.c {
		c, k, dd := &p.c[i], &w[i], &dc[i]
		mu := k.mult * nu
		kr, kf := mu-c.r*c.y, mu-c.f*c.v
		// dd.z holds the complementarity targets until the back-substitution.
		var rhs [blockSize]float64
		if aff != nil {
			ac := &aff.c[i]
			kr -= ac.r * ac.y
			kf -= ac.f * ac.v
			for g := range n {
				kx := mu - c.x[g]*c.z[g] - ac.x[g]*ac.z[g]
				dd.z[g], rhs[g] = kx, kx*k.ix[g]+k.rd[g]
			}
		} else {
			for g := range n {
				kx := mu - c.x[g]*c.z[g]
				dd.z[g], rhs[g] = kx, kx*k.ix[g]+k.rd[g]
			}
		}
		// kinv rhs written out, the right-hand side in registers (through memory, the
		// time and fairness rows' values waited on their stores: a tenth of a run).
		r0, r1, r2, r3, r4 := rhs[0], rhs[1], rhs[2], k.rr-kr*k.iy, kf*k.iv-k.rf
		m := &k.kinv
		b0 := m[0][0]*r0 + m[0][1]*r1 + m[0][2]*r2 + m[0][3]*r3 + m[0][4]*r4
		b1 := m[1][0]*r0 + m[1][1]*r1 + m[1][2]*r2 + m[1][3]*r3 + m[1][4]*r4
		b2 := m[2][0]*r0 + m[2][1]*r1 + m[2][2]*r2 + m[2][3]*r3 + m[2][4]*r4
		b3 := m[3][0]*r0 + m[3][1]*r1 + m[3][2]*r2 + m[3][3]*r3 + m[3][4]*r4
		b4 := m[4][0]*r0 + m[4][1]*r1 + m[4][2]*r2 + m[4][3]*r3 + m[4][4]*r4
		k.base = [blockSize]float64{b0, b1, b2, b3, b4}
		ms := k.ms
		sum0, sum1, sum2, sumT = sum0+ms*b0, sum1+ms*b1, sum2+ms*b2, sumT+b4
	}
	rhs0 = [NumGPUs]float64{sum0, sum1, sum2}
	for g := range n {
		sys[g][n+1] = rhs0[g]
	}
	sys[n][n+1] = sumT
	sol := solveAug(sys, n+1, n+1)
	dt := sol[n]
	d.t = dt
	// The capacity each type's steps use, over all NumGPUs types: a type the cluster lacks has
	// an identity row and zero right-hand side in every block, so its sum stays 0.
	var used0, used1, used2 float64
	// The most negative ratios of a step to its slack or dual (0 when none is).
	wp, wd := 0.0, 0.0
	for i := range p.c {
		c, k, dd := &p.c[i], &w[i], &dc[i]
		ms := k.ms
		var du [NumGPUs]float64 // the coupling terms of the right-hand side (no dt in the time row)
		for h := range n {
			du[h] = -ms * sol[h]
		}
		v := k.base
		m := &k.kinv
		du0, du1, du2 := du[0], du[1], du[2]
		v[0] += m[0][0]*du0 + m[0][1]*du1 + m[0][2]*du2 + m[0][fr]*dt
		v[1] += m[1][0]*du0 + m[1][1]*du1 + m[1][2]*du2 + m[1][fr]*dt
		v[2] += m[2][0]*du0 + m[2][1]*du1 + m[2][2]*du2 + m[2][fr]*dt
		v[tr] += m[tr][0]*du0 + m[tr][1]*du1 + m[tr][2]*du2 + m[tr][fr]*dt
		v[fr] += m[fr][0]*du0 + m[fr][1]*du1 + m[fr][2]*du2 + m[fr][fr]*dt
		sx, ax := 0.0, 0.0
		for g := range n {
			dx := v[g]
			dd.x[g] = dx
			sx += dx
			ax += k.a[g] * dx
			dz := (dd.z[g] - c.z[g]*dx) * k.ix[g]
			dd.z[g] = dz
			wp = smaller(wp, dx*k.ix[g])
			wd = smaller(wd, dz*k.iz[g])
		}
		used0, used1, used2 = used0+ms*v[0], used1+ms*v[1], used2+ms*v[2]
		dd.r, dd.f = k.rr-sx, k.rf+ax-dt
		dd.y, dd.v = v[tr], -v[fr]
		wp = smaller(smaller(wp, dd.r*k.ir), dd.f*k.iff)
		wd = smaller(smaller(wd, dd.y*k.iy), dd.v*k.iv)
	}
	used := [NumGPUs]float64{used0, used1, used2}
	for g := range n {
		d.q[g] = s.rq[g] - used[g]
		d.u[g] = sol[g]
		wp = smaller(wp, d.q[g]/p.q[g])
		wd = smaller(wd, d.u[g]/p.u[g])
	}
	return 1 / (0 - wp), 1 / (0 - wd)
}

// blockInverse's formulas name the three types, and direction the block's five rows: this
// fails to compile unless NumGPUs is 3.
var _ = [1]struct{}{}[NumGPUs-3]

// solveAug solves the k x k system in aug[:k][:k] with right-hand side aug[:k][rhs] by
// Gaussian elimination with partial pivoting.
func solveAug(aug [NumGPUs + 1][blockSize]float64, k, rhs int) [NumGPUs + 1]float64 {
	for c := range k {
		piv := c
		for r := c + 1; r < k; r++ {
			if math.Abs(aug[r][c]) > math.Abs(aug[piv][c]) {
				piv = r
			}
		}
		aug[c], aug[piv] = aug[piv], aug[c]
		for r := c + 1; r < k; r++ {
			f := aug[r][c] / aug[c][c]
			for cc := c; cc < k; cc++ {
				aug[r][cc] -= f * aug[c][cc]
			}
			aug[r][rhs] -= f * aug[c][rhs]
		}
	}
	var x [NumGPUs + 1]float64
	for r := k - 1; r >= 0; r-- {
		v := aug[r][rhs]
		for c := r + 1; c < k; c++ {
			v -= aug[r][c] * x[c]
		}
		x[r] = v / aug[r][r]
	}
	return x
}

// blockInverse writes the inverse of a class's block
//
//	[D   1   a ]
//	[1' -rho 0 ]
//	[a'  0  -phi],  D = diag(1/c) over the cluster's n types, identity rows for the others,
//
// in closed form, from c = x/z (0 for a type the cluster lacks, which decouples it exactly).
// Every entry is a cofactor over the determinant, both divided by det D: polynomials in c,
// rho, phi and the differences a_g - a_h. For the determinant and the diagonal all terms are
// non-negative, e.g. det/det D = rho phi + sum_g (rho a_g^2 + phi) c_g + sum_{g<h} (a_g - a_h)^2
// c_g c_h, so nothing large cancels where the block is nearly singular (rho, phi and the z of
// free allocations vanish near the optimum; without perf all a_g are equal and the time and
// fairness rows nearly parallel), where elimination with pivoting can meet a zero pivot. The
// other entries are sums of two or three products. A third of the operations of elimination,
// and no branch.
func blockInverse(c, a *[NumGPUs]float64, rho, phi float64, n int, inv *[blockSize][blockSize]float64) {
	c0, c1, c2 := c[0], c[1], c[2]
	a0, a1, a2 := a[0], a[1], a[2]
	e01, e02, e12 := a0-a1, a0-a2, a1-a2
	w0, w1, w2 := rho*a0*a0+phi, rho*a1*a1+phi, rho*a2*a2+phi
	c01, c02, c12 := c0*c1, c0*c2, c1*c2
	rp := rho * phi
	q := 1 / (rp + w0*c0 + w1*c1 + w2*c2 + e01*e01*c01 + e02*e02*c02 + e12*e12*c12)
	tf := (a0*c0 + a1*c1 + a2*c2) * q
	inv[tr][tr], inv[fr][fr], inv[tr][fr], inv[fr][tr] = -(phi+a0*a0*c0+a1*a1*c1+a2*a2*c2)*q, -(rho+c0+c1+c2)*q, tf, tf

	xt0 := c0 * (phi - a1*e01*c1 - a2*e02*c2) * q
	xt1 := c1 * (phi + a0*e01*c0 - a2*e12*c2) * q
	xt2 := c2 * (phi + a0*e02*c0 + a1*e12*c1) * q
	xf0 := c0 * (rho*a0 + e01*c1 + e02*c2) * q
	xf1 := c1 * (rho*a1 - e01*c0 + e12*c2) * q
	xf2 := c2 * (rho*a2 - e02*c0 - e12*c1) * q
	inv[0][tr], inv[1][tr], inv[2][tr] = xt0, xt1, xt2
	inv[tr][0], inv[tr][1], inv[tr][2] = xt0, xt1, xt2
	inv[0][fr], inv[1][fr], inv[2][fr] = xf0, xf1, xf2
	inv[fr][0], inv[fr][1], inv[fr][2] = xf0, xf1, xf2

	inv[0][0] = c0 * (rp + w1*c1 + w2*c2 + e12*e12*c12) * q
	inv[1][1] = c1 * (rp + w0*c0 + w2*c2 + e02*e02*c02) * q
	inv[2][2] = c2 * (rp + w0*c0 + w1*c1 + e01*e01*c01) * q
	o01 := -c01 * (phi + rho*a0*a1 + e02*e12*c2) * q
	o02 := -c02 * (phi + rho*a0*a2 - e01*e12*c1) * q
	o12 := -c12 * (phi + rho*a1*a2 + e01*e02*c0) * q
	inv[0][1], inv[1][0] = o01, o01
	inv[0][2], inv[2][0] = o02, o02
	inv[1][2], inv[2][1] = o12, o12
	for g := n; g < NumGPUs; g++ {
		inv[g][g] = 1 // a type the cluster lacks: an identity row, uncoupled
	}
}
