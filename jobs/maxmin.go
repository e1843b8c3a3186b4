package jobs

import "math"

// maxMinLP solves the linear program behind Gavel's max-min fairness policies,
//
//	maximize t  s.t.  sum_g a[i][g] x[i][g] >= t,  sum_g x[i][g] <= 1,
//	                  sum_i scale[i] x[i][g] <= capacity[g],  x >= 0,
//
// over the GPU types g < n, with a log-barrier interior-point method whose Newton steps exploit
// the structure (a small block per job, coupled only through t and the n capacity rows), so a
// solve costs O(jobs). The optimum is rarely unique (identical jobs can trade time on GPU
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
	rows  map[[NumGPUs + 1]float64]int

	x, dx, p, q [][NumGPUs]float64
	w           [][NumGPUs][NumGPUs]float64
	t           float64
}

// Identical jobs (same row and scale) form one class with a multiplicity: on the central path
// they have identical allocations anyway, so the barrier counts each class's terms once per job.
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
func (s *maxMinLP) solve() ([][NumGPUs]float64, float64) {
	m, n := len(s.a), s.n
	if len(s.mult) != m {
		s.mult, s.class = s.mult[:0], s.class[:0]
		for i := range m {
			s.mult = append(s.mult, 1)
			s.class = append(s.class, i)
		}
	}
	s.x = grow(s.x, m)
	s.dx = grow(s.dx, m)
	s.p = grow(s.p, m)
	s.q = grow(s.q, m)
	if cap(s.w) < m {
		s.w = make([][NumGPUs][NumGPUs]float64, m)
	}
	s.w = s.w[:m]
	// A strictly feasible start: every job gets the same share of each type, in proportion to
	// the type's size, at half of what would fill either the cluster or the job's time.
	total, demand := 0.0, 0.0
	for g := range n {
		total += s.cap[g]
	}
	for i := range m {
		demand += s.mult[i] * s.scale[i]
	}
	alpha := 0.5 * math.Min(1, total/demand)
	minF := math.Inf(1)
	for i := range m {
		f := 0.0
		for g := range n {
			s.x[i][g] = alpha * s.cap[g] / total
			f += s.a[i][g] * s.x[i][g]
		}
		minF = math.Min(minF, f)
	}
	s.t = minF - 1
	if minF > 0 {
		s.t = 0.5 * minF
	}
	barriers := float64(n)
	for i := range m {
		barriers += s.mult[i] * float64(n+2)
	}
	// Intermediate centres need only be rough; the last one is solved tightly.
	for tau := 1.0; ; tau *= 1000 {
		last := barriers/tau <= 1e-9*math.Max(1, math.Abs(s.t))
		tol := 1e-2
		if last {
			tol = 1e-7
		}
		s.center(tau, tol)
		if last {
			break
		}
	}
	s.out = grow(s.out, len(s.class))
	for i, c := range s.class {
		for g := range n {
			s.out[i][g] = math.Min(1, math.Max(0, s.x[c][g]))
		}
	}
	return s.out, s.t
}

func grow(v [][NumGPUs]float64, m int) [][NumGPUs]float64 {
	if cap(v) < m {
		return make([][NumGPUs]float64, m)
	}
	return v[:m]
}

// barrier is tau*(-t) minus the sum of the logs of every slack, +Inf outside the interior.
func (s *maxMinLP) barrier(tau float64, x [][NumGPUs]float64, t float64, step float64, dx [][NumGPUs]float64, dt float64) float64 {
	n := s.n
	v := -tau * (t + step*dt)
	var used [NumGPUs]float64
	for i := range x {
		row, fair := 1.0, -(t + step*dt)
		for g := range n {
			xi := x[i][g] + step*dx[i][g]
			if xi <= 0 {
				return math.Inf(1)
			}
			v -= s.mult[i] * math.Log(xi)
			row -= xi
			fair += s.a[i][g] * xi
			used[g] += s.mult[i] * s.scale[i] * xi
		}
		if row <= 0 || fair <= 0 {
			return math.Inf(1)
		}
		v -= s.mult[i] * (math.Log(row) + math.Log(fair))
	}
	for g := range n {
		q := s.cap[g] - used[g]
		if q <= 0 {
			return math.Inf(1)
		}
		v -= math.Log(q)
	}
	return v
}

// center runs damped Newton steps on the barrier for this tau until the Newton decrement
// (half its square) is below tol.
func (s *maxMinLP) center(tau, tol float64) {
	m, n := len(s.a), s.n
	var f0 float64
	for iter := 0; iter < 100; iter++ {
		var q, gam [NumGPUs]float64
		q = s.cap
		for i := range m {
			for g := range n {
				q[g] -= s.mult[i] * s.scale[i] * s.x[i][g]
			}
		}
		for g := range n {
			gam[g] = 1 / (q[g] * q[g])
		}
		gt, htt := -tau, 0.0
		// Schur system in (z, dt): [diag(q^2) + sum s^2 W_i, v; -v, eta] = [sum s P_i; rt]
		var sys [NumGPUs + 1][NumGPUs + 2]float64
		var grad [NumGPUs]float64
		for i := range m {
			r, f := 1.0, -s.t
			for g := range n {
				r -= s.x[i][g]
				f += s.a[i][g] * s.x[i][g]
			}
			mu := s.mult[i]
			ir, iff := 1/r, 1/f
			gt += mu * iff
			htt += mu * iff * iff
			var b [NumGPUs][NumGPUs]float64
			for g := range n {
				grad[g] = mu*(-1/s.x[i][g]+ir-s.a[i][g]*iff) + mu*s.scale[i]/q[g]
				for h := range n {
					b[g][h] = mu * (ir*ir + iff*iff*s.a[i][g]*s.a[i][h])
				}
				b[g][g] += mu / (s.x[i][g] * s.x[i][g])
			}
			w := invert(b, n)
			s.w[i] = w
			for g := range n {
				pv, qv := 0.0, 0.0
				for h := range n {
					pv -= w[g][h] * grad[h]
					qv -= w[g][h] * mu * s.a[i][h] * iff * iff
				}
				s.p[i][g], s.q[i][g] = pv, qv
			}
			// Stash -g_i in dx for the decrement below.
			for g := range n {
				s.dx[i][g] = -grad[g]
			}
			si := mu * s.scale[i]
			for g := range n {
				for h := range n {
					sys[g][h] += si * si * w[g][h]
				}
				sys[g][n] += si * s.q[i][g]
				sys[g][n+1] += si * s.p[i][g]
				// t row: -v.z + (htt - sum h_i.Q_i) dt = -g_t - sum h_i.P_i, h_i = -a_i/f^2
				sys[n][g] -= si * s.q[i][g]
				sys[n][n] += mu * s.a[i][g] * iff * iff * s.q[i][g]
				sys[n][n+1] += mu * s.a[i][g] * iff * iff * s.p[i][g]
			}
		}
		for g := range n {
			sys[g][g] += 1 / gam[g]
		}
		sys[n][n] += htt
		sys[n][n+1] -= gt
		z, dt := solveSmall(sys, n+1)
		dec := -gt * dt
		for i := range m {
			for g := range n {
				d := s.p[i][g] - s.q[i][g]*dt
				for h := range n {
					d -= s.mult[i] * s.scale[i] * s.w[i][g][h] * z[h]
				}
				dec += s.dx[i][g] * d
				s.dx[i][g] = d
			}
		}
		if dec/2 <= tol {
			return
		}
		if iter == 0 {
			f0 = s.barrier(tau, s.x, s.t, 0, s.dx, dt)
		}
		step := math.Min(1, 0.99*s.maxStep(dt))
		for ; step > 1e-12; step /= 2 {
			if f := s.barrier(tau, s.x, s.t, step, s.dx, dt); f <= f0-0.25*step*dec {
				f0 = f // the barrier at the next point
				break
			}
		}
		if step <= 1e-12 {
			return
		}
		for i := range m {
			for g := range n {
				s.x[i][g] += step * s.dx[i][g]
			}
		}
		s.t += step * dt
	}
}

// maxStep is the largest step along (dx, dt) that keeps every slack non-negative.
func (s *maxMinLP) maxStep(dt float64) float64 {
	n := s.n
	limit := math.Inf(1)
	ratio := func(v, dv float64) {
		if dv < 0 {
			limit = math.Min(limit, -v/dv)
		}
	}
	var used, dused [NumGPUs]float64
	for i := range s.x {
		row, drow, fair, dfair := 1.0, 0.0, -s.t, -dt
		for g := range n {
			ratio(s.x[i][g], s.dx[i][g])
			row -= s.x[i][g]
			drow -= s.dx[i][g]
			fair += s.a[i][g] * s.x[i][g]
			dfair += s.a[i][g] * s.dx[i][g]
			used[g] += s.mult[i] * s.scale[i] * s.x[i][g]
			dused[g] += s.mult[i] * s.scale[i] * s.dx[i][g]
		}
		ratio(row, drow)
		ratio(fair, dfair)
	}
	for g := range n {
		ratio(s.cap[g]-used[g], -dused[g])
	}
	return limit
}

// invert inverts the leading n x n block of a symmetric positive definite matrix by its
// Cholesky factor.
func invert(b [NumGPUs][NumGPUs]float64, n int) [NumGPUs][NumGPUs]float64 {
	var l, li, inv [NumGPUs][NumGPUs]float64
	for i := range n {
		for k := 0; k <= i; k++ {
			v := b[i][k]
			for p := range k {
				v -= l[i][p] * l[k][p]
			}
			if k == i {
				l[i][i] = math.Sqrt(v)
			} else {
				l[i][k] = v / l[k][k]
			}
		}
	}
	// li = L^-1 (lower triangular), inv = li^T li.
	for i := range n {
		li[i][i] = 1 / l[i][i]
		for k := range i {
			v := 0.0
			for p := k; p < i; p++ {
				v -= l[i][p] * li[p][k]
			}
			li[i][k] = v / l[i][i]
		}
	}
	for i := range n {
		for k := 0; k <= i; k++ {
			v := 0.0
			for p := i; p < n; p++ {
				v += li[p][i] * li[p][k]
			}
			inv[i][k], inv[k][i] = v, v
		}
	}
	return inv
}

// solveSmall solves the k x k Schur system (right-hand side in column k) for z (the first
// k-1 unknowns) and dt (the last).
func solveSmall(sys [NumGPUs + 1][NumGPUs + 2]float64, k int) ([NumGPUs]float64, float64) {
	sol := solveAug(sys, k, k)
	var z [NumGPUs]float64
	copy(z[:], sol[:k-1])
	return z, sol[k-1]
}

// solveAug solves the k x k system in aug[:k][:k] with right-hand side aug[:k][rhs] by
// Gaussian elimination with partial pivoting.
func solveAug(aug [NumGPUs + 1][NumGPUs + 2]float64, k, rhs int) [NumGPUs + 1]float64 {
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
