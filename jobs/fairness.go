package jobs

import "math"

// Finish-time fairness (Themis, Mahajan et al., NSDI'20, as Gavel's FinishTimeFairness policy
// measures it): rho = a job's JCT under the policy / the time it would take alone on a 1/N
// share of the cluster, N the jobs in the system. N changes over the job's life, so the time
// alone is accumulated as Gavel's policy does: the steps a job runs while N jobs are in the
// system count at its isolated throughput for that N. rho > 1: the job did worse than on its
// fair share.

// isolatedThroughput is Gavel's IsolatedPolicy: the job gets 1/n of every type's GPUs, that
// is capacity/(n x scale) of each type's time, scaled down when it sums to more than all of
// its time, and runs at the throughput-weighted sum.
func isolatedThroughput(tput [NumGPUs]float64, scale int, c Cluster, n int) float64 {
	var x [NumGPUs]float64
	sum := 0.0
	for g := range GPU(NumGPUs) {
		if c.GPUs[g] > 0 {
			x[g] = float64(c.GPUs[g]) / float64(n) / float64(scale)
			sum += x[g]
		}
	}
	sum = math.Max(sum, 1)
	iso := 0.0
	for g := range GPU(NumGPUs) {
		iso += tput[g] * x[g] / sum
	}
	return iso
}

// fairShare accumulates each job's time alone on its fair share.
type fairShare struct {
	cluster Cluster
	alone   []float64 // by job index: seconds alone on its 1/N share for the steps run
	// by job index: the N of its last isolated throughput, and that throughput (N rarely
	// changes from one of a job's rounds to the next)
	isoN []int
	iso  []float64
}

func newFairShare(c Cluster, jobs int) *fairShare {
	return &fairShare{cluster: c, alone: make([]float64, jobs), isoN: make([]int, jobs), iso: make([]float64, jobs)}
}

// ran records steps a job ran while n jobs were in the system.
func (f *fairShare) ran(idx int, tput [NumGPUs]float64, scale int, steps float64, n int) {
	if steps <= 0 {
		return
	}
	if f.isoN[idx] != n {
		f.isoN[idx], f.iso[idx] = n, isolatedThroughput(tput, scale, f.cluster, n)
	}
	f.alone[idx] += steps / f.iso[idx]
}

// rho fills the result's finish-time fairness from its JCTs.
func (f *fairShare) rho(r *Result, w [2]int) {
	r.Rho = make(map[int]float64, len(r.JCT))
	sum, above := 0.0, 0
	for i := w[0]; i < w[1]; i++ { // index order: the sum's last bits do not depend on map order
		jct, ok := r.JCT[i]
		if !ok {
			continue
		}
		rho := jct / f.alone[i]
		r.Rho[i] = rho
		sum += rho
		r.RhoMax = math.Max(r.RhoMax, rho)
		if rho > 1 {
			above++
		}
	}
	if n := len(r.Rho); n > 0 {
		r.RhoMean = sum / float64(n)
		r.RhoAboveOne = float64(above) / float64(n)
	}
}
