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
	a     [][NumGPUs]float64
	scale []float64
	cap   [NumGPUs]float64
	n     int

	x, dx, p, q [][NumGPUs]float64
	w           [][NumGPUs][NumGPUs]float64
	t           float64
}

// setup loads Gavel's MaxMinFairnessPolicyWithPerf program for m jobs on the cluster's types:
// job i's row is its throughputs times scale / (priority weight x proportional throughput),
// the proportional throughput being what it would get with each type's share of the cluster.
// Without perf (max_min_fairness) every throughput is 1.
func (s *maxMinLP) setup(types []GPU, c Cluster, perf bool, m int, job func(i int) (tput [NumGPUs]float64, scale int, weight float64)) {
	s.n = len(types)
	s.a, s.scale = s.a[:0], s.scale[:0]
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
		for k := range types {
			row[k] *= float64(scale) / (weight * prop)
		}
		s.a = append(s.a, row)
		s.scale = append(s.scale, float64(scale))
	}
}

// solve returns the allocation, clipped to [0, 1] as Gavel clips cvxpy's, and the optimum t.
func (s *maxMinLP) solve() ([][NumGPUs]float64, float64) {
	m, n := len(s.a), s.n
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
		demand += s.scale[i]
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
	barriers := float64(m*n + 2*m + n)
	for tau := 1.0; ; tau *= 20 {
		s.center(tau)
		if barriers/tau <= 1e-9*math.Max(1, math.Abs(s.t)) {
			break
		}
	}
	for i := range m {
		for g := range n {
			s.x[i][g] = math.Min(1, math.Max(0, s.x[i][g]))
		}
	}
	return s.x, s.t
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
			v -= math.Log(xi)
			row -= xi
			fair += s.a[i][g] * xi
			used[g] += s.scale[i] * xi
		}
		if row <= 0 || fair <= 0 {
			return math.Inf(1)
		}
		v -= math.Log(row) + math.Log(fair)
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

// center runs damped Newton steps on the barrier for this tau.
func (s *maxMinLP) center(tau float64) {
	m, n := len(s.a), s.n
	for iter := 0; iter < 100; iter++ {
		var q, gam [NumGPUs]float64
		q = s.cap
		for i := range m {
			for g := range n {
				q[g] -= s.scale[i] * s.x[i][g]
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
			ir, iff := 1/r, 1/f
			gt += iff
			htt += iff * iff
			var b [NumGPUs][NumGPUs]float64
			for g := range n {
				grad[g] = -1/s.x[i][g] + ir + s.scale[i]/q[g] - s.a[i][g]*iff
				for h := range n {
					b[g][h] = ir*ir + iff*iff*s.a[i][g]*s.a[i][h]
				}
				b[g][g] += 1 / (s.x[i][g] * s.x[i][g])
			}
			w := invert(b, n)
			s.w[i] = w
			for g := range n {
				pv, qv := 0.0, 0.0
				for h := range n {
					pv -= w[g][h] * grad[h]
					qv -= w[g][h] * s.a[i][h] * iff * iff
				}
				s.p[i][g], s.q[i][g] = pv, qv
			}
			// Stash -g_i in dx for the decrement below.
			for g := range n {
				s.dx[i][g] = -grad[g]
			}
			si := s.scale[i]
			for g := range n {
				for h := range n {
					sys[g][h] += si * si * w[g][h]
				}
				sys[g][n] += si * s.q[i][g]
				sys[g][n+1] += si * s.p[i][g]
				// t row: -v.z + (htt - sum h_i.Q_i) dt = -g_t - sum h_i.P_i, h_i = -a_i/f^2
				sys[n][g] -= si * s.q[i][g]
				sys[n][n] += s.a[i][g] * iff * iff * s.q[i][g]
				sys[n][n+1] += s.a[i][g] * iff * iff * s.p[i][g]
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
					d -= s.scale[i] * s.w[i][g][h] * z[h]
				}
				dec += s.dx[i][g] * d
				s.dx[i][g] = d
			}
		}
		if dec/2 <= 1e-10 {
			return
		}
		f0 := s.barrier(tau, s.x, s.t, 0, s.dx, dt)
		step := 1.0
		for ; step > 1e-12; step /= 2 {
			if s.barrier(tau, s.x, s.t, step, s.dx, dt) <= f0-0.25*step*dec {
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

// invert inverts the leading n x n block of a symmetric positive definite matrix.
func invert(b [NumGPUs][NumGPUs]float64, n int) [NumGPUs][NumGPUs]float64 {
	var aug [NumGPUs + 1][NumGPUs + 2]float64
	var inv [NumGPUs][NumGPUs]float64
	for col := range n {
		for g := range n {
			for h := range n {
				aug[g][h] = b[g][h]
			}
			aug[g][n] = 0
		}
		aug[col][n] = 1
		sol := solveAug(aug, n, n)
		for g := range n {
			inv[g][col] = sol[g]
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
