package fungible

import (
	"cmp"
	"container/heap"
	"fmt"
	"math"
	"slices"

	"github.com/schedrl/schedrl/jobs"
)

func init() {
	registerPolicy("oracle_srtf", func() RoundPolicy { return Oracle{} })
	registerPolicy("oracle_lrtf", func() RoundPolicy { return Oracle{Longest: true} })
}

// Oracle is a clairvoyant ceiling, not a deployable scheduler: it reads every job's true remaining
// steps (which no real cluster knows) and ignores what moving a job costs (this world charges no
// restart). Each round it chooses every present job's GPU type and count among the counts Gavel's
// table measures for its model (1, 2, 4, 8; elastic regardless of the request), at the type's fair
// share of CPUs and memory, in two stages:
//
//  1. Remaining time first, elastic. oracle-srtf (average JCT) maximises Σ_j progress_j(c) / T_j,
//     where T_j is the job's remaining time at its fastest configuration and progress_j(c) the
//     share of its remaining steps configuration c runs this round, capped at all of them (a job
//     that finishes inside the round gains nothing here from more GPUs, which would idle after it
//     until the boundary): the shortest first. oracle-lrtf (Longest, makespan) maximises
//     Σ_j work_j(c) · T_j / round, where work_j(c) is the seconds of the job's fastest speed that c
//     runs this round (capped at its remaining time): the longest first, each at its most
//     GPU-efficient count. Solved by SiaSolve's greedy over the jobs with the best value per GPU, as
//     many as there are free GPUs (a job takes at least one).
//  2. Growth into the GPUs stage 1 left idle: the move of one job to a configuration with more GPUs
//     that saves the most seconds of its estimated completion per GPU added (finishing inside the
//     round: its finish time; otherwise the round plus the rest at its fastest speed), until none
//     saves any.
//
// After placing, jobs are raised to their best-case CPUs and memory where their servers have room,
// the shortest first. Deterministic; no state between rounds.
type Oracle struct {
	Longest bool // longest remaining time first (oracle-lrtf), for the makespan
}

// oracleJob is a candidate of a round: its place in RoundState.Present, its configurations and
// their speeds, the remaining steps and its remaining time at its fastest configuration.
type oracleJob struct {
	i            int
	configs      []siaConfig
	speeds       []float64
	rest, left   float64
	perGPU, vmax float64 // its best stage-1 value per GPU; its fastest speed
}

// finish is the job's estimated completion from the boundary at speed v (0: it waits the round).
func (j oracleJob) finish(v, length float64) float64 {
	if v*length >= j.rest {
		return j.rest / v
	}
	return length + (j.rest-v*length)/j.vmax
}

// Plan chooses and places the round's configurations on top of l.
func (o Oracle) Plan(l *Ledger, m SpeedModel, st RoundState) (Plan, error) {
	length := 360.0
	if st.Round != nil && st.Round.Length > 0 {
		length = st.Round.Length
	}
	c := l.Cluster()
	free := make([]int, len(GPUTypes))
	for _, srv := range c {
		if k := slices.Index(GPUTypes, srv.GPUType); k >= 0 {
			free[k] += srv.GPUs
		}
	}
	for _, id := range l.Jobs() {
		a, _ := l.Get(id)
		free[slices.Index(GPUTypes, a.GPUType)] -= a.GPUCount()
	}
	cands := make([]oracleJob, 0, len(st.Present))
	for i, js := range st.Present {
		rest := js.Remaining()
		if rest <= 0 {
			continue
		}
		speeds, configs, err := oracleConfigs(c, m, js.Job)
		if err != nil {
			return Plan{}, err
		}
		j := oracleJob{i: i, configs: configs, speeds: speeds, rest: rest, vmax: slices.Max(speeds)}
		j.left = rest / j.vmax
		for k, v := range speeds {
			if o.Longest {
				configs[k].value = min(v*length, rest) / j.vmax * j.left / length
			} else {
				configs[k].value = min(v*length/rest, 1) / j.left
			}
			j.perGPU = max(j.perGPU, configs[k].value/float64(configs[k].gpus))
		}
		cands = append(cands, j)
	}
	slices.SortStableFunc(cands, func(a, b oracleJob) int { return cmp.Compare(b.perGPU, a.perGPU) })
	total := 0
	for _, f := range free {
		total += f
	}
	cands = cands[:min(len(cands), total)]
	configs := make([][]siaConfig, len(cands))
	for k, j := range cands {
		configs[k] = j.configs
	}
	chosen := SiaSolve(configs, free)
	for k, ch := range chosen {
		if ch >= 0 {
			free[configs[k][ch].typ] -= configs[k][ch].gpus
		}
	}
	growIdle(cands, chosen, free, length)
	order := make([]int, 0, len(chosen))
	for k, ch := range chosen {
		if ch >= 0 {
			order = append(order, k)
		}
	}
	// The largest first, as Sia places: every chosen count then fits at the fair share.
	slices.SortStableFunc(order, func(a, b int) int { return configs[b][chosen[b]].gpus - configs[a][chosen[a]].gpus })
	pl := NewPlacer(l, m)
	for _, k := range order {
		cfg := configs[k][chosen[k]]
		t := GPUTypes[cfg.typ]
		fc, fm := c.FairShare(t)
		if _, err := pl.Start(st.Present[cands[k].i].Job, t, cfg.gpus, fc, fm); err != nil {
			return Plan{}, err
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(cands[a].left, cands[b].left) })
	for _, k := range order {
		if err := raise(pl.p, st.Present[cands[k].i].Job); err != nil {
			return Plan{}, err
		}
	}
	return pl.Plan(), nil
}

// growIdle is Oracle's stage 2 on chosen (indices into each job's configurations, −1 none)
// with free GPUs per type left: the move that saves the most seconds per GPU added first (ties to
// the lower job, then configuration), until no move that fits saves any.
func growIdle(cands []oracleJob, chosen, free []int, length float64) {
	for {
		bestK, bestC, bestRatio := -1, -1, 0.0
		for k, j := range cands {
			curV, curG, curT := 0.0, 0, -1
			if ch := chosen[k]; ch >= 0 {
				curV, curG, curT = j.speeds[ch], j.configs[ch].gpus, j.configs[ch].typ
			}
			now := j.finish(curV, length)
			for ci, cfg := range j.configs {
				added := cfg.gpus - curG
				room := free[cfg.typ]
				if cfg.typ == curT {
					room += curG
				}
				if added <= 0 || room < cfg.gpus {
					continue
				}
				if ratio := (now - j.finish(j.speeds[ci], length)) / float64(added); ratio > 1e-9 && ratio > bestRatio {
					bestK, bestC, bestRatio = k, ci, ratio
				}
			}
		}
		if bestK < 0 {
			return
		}
		if ch := chosen[bestK]; ch >= 0 {
			free[cands[bestK].configs[ch].typ] += cands[bestK].configs[ch].gpus
		}
		free[cands[bestK].configs[bestC].typ] -= cands[bestK].configs[bestC].gpus
		chosen[bestK] = bestC
	}
}

// raise gives a held job its best-case CPUs and memory per GPU (never less than it holds) where
// every server it is on has the room; otherwise it keeps what it holds.
func raise(p *planner, j Job) error {
	a, ok := p.l.Get(j.ID)
	if !ok {
		return nil
	}
	prof, err := p.m.Sens.Profile(j.Type)
	if err != nil {
		return err
	}
	cpus, mem := max(a.CPUsPerGPU, prof.BestCPUs), max(a.MemPerGPU, prof.BestMem)
	if cpus == a.CPUsPerGPU && mem == a.MemPerGPU {
		return nil
	}
	for _, part := range a.Parts {
		r, n := p.room(part.Server), int64(len(part.GPUs))
		if r.cpu < n*(milli(cpus)-milli(a.CPUsPerGPU)) || r.mem < n*(milli(mem)-milli(a.MemPerGPU)) {
			return nil
		}
	}
	up := a
	up.CPUsPerGPU, up.MemPerGPU = cpus, mem
	return p.do(Change{Resize, up})
}

// oracleConfigs are job j's configurations on the cluster's GPU types, each count of Gavel's table
// that is faster than the smaller ones on the same type, with their speeds at the type's fair
// share of CPUs and memory.
func oracleConfigs(c Cluster, m SpeedModel, j Job) ([]float64, []siaConfig, error) {
	prof, err := m.Sens.Profile(j.Type)
	if err != nil {
		return nil, nil, err
	}
	var speeds []float64
	var out []siaConfig
	for k, t := range GPUTypes {
		fc, fm := c.FairShare(t)
		if fc == 0 {
			continue // the cluster has no server of this type
		}
		f, err := prof.Factor(fc, fm)
		if err != nil {
			return nil, nil, err
		}
		top := 0.0
		for _, g := range []int{1, 2, 4, 8} {
			v, ok := m.Tput.Alone(t, j.Type, g)
			if !ok || v*f <= top {
				continue
			}
			top = v * f
			out = append(out, siaConfig{typ: k, gpus: g})
			speeds = append(speeds, v*f)
		}
	}
	if len(out) == 0 {
		return nil, nil, fmt.Errorf("job %d: no throughput for %q on any GPU type and count of the cluster", j.ID, j.Type)
	}
	return speeds, out, nil
}

// Bound is a lower bound on what any schedule of a workload reaches in this world, from relaxations
// of it; no schedule's average JCT or makespan is below it.
type Bound struct {
	AvgJCT   float64 // s
	Makespan float64 // s
}

// typeVec is one value per GPU type, in GPUTypes' order.
type typeVec = [jobs.NumGPUs]float64

// boundGrid is how finely LowerBound searches the GPU types' prices: steps per unit of price
// weight for the makespan, and for the average JCT (each point one fluid run).
const boundGrid, boundGridJCT = 100, 20

// LowerBound bounds every schedule of work on c, from two relaxations of the world.
//
// No job runs before it arrives or faster than at its fastest allocation (any GPU type of the
// cluster and count of Gavel's table, at its profile's highest factor for CPUs and memory; a
// partner on the same GPUs never speeds a job up in the table): each JCT is at least the job's
// least run time, and the makespan at least an arrival plus its least run time.
//
// Capacity: a GPU of type t runs at most eff[j][t] of job j's steps per second (its most
// GPU-efficient count there, counting half the GPUs for each of two jobs sharing them). For any
// prices p_t ≥ 0 with Σ_t N_t·p_t = 1 (N_t GPUs of type t), job j's size s_j = steps_j·min_t
// p_t/eff[j][t] shrinks at a total rate of at most 1 over all jobs at any instant (LP duality
// on the fluid cluster), so one fluid machine of rate 1 serving the sizes bounds the schedule:
// the sizes arriving from any arrival on bound the makespan, and preemptive shortest remaining
// first there (optimal on one machine for the sum of completion times) bounds the sum of JCTs.
// The prices are searched on a grid; every point gives a valid bound, the best is kept.
//
// share false leaves sharing out of the capacity relaxation: a bound for the policies that never
// put two jobs on the same GPUs (sia, tune-scale, Oracle), tighter on a busy cluster.
func LowerBound(c Cluster, m SpeedModel, work []Job, share bool) (Bound, error) {
	var gpus typeVec
	for _, s := range c {
		if k := slices.Index(GPUTypes, s.GPUType); k >= 0 {
			gpus[k] += float64(s.GPUs)
		}
	}
	if len(work) == 0 {
		return Bound{}, fmt.Errorf("lower bound: no jobs")
	}
	eff := make([]typeVec, len(work))
	var b Bound
	sumLeast := 0.0
	for i, j := range work {
		fastest, e, err := boundSpeeds(c, m, j, share)
		if err != nil {
			return Bound{}, err
		}
		eff[i] = e
		least := float64(j.Steps) / fastest
		sumLeast += least
		b.Makespan = max(b.Makespan, j.Arrival+least)
	}
	size := make([]float64, len(work))
	sizes := func(w typeVec) []float64 {
		for i, j := range work {
			s := math.Inf(1)
			for t, e := range eff[i] {
				if e > 0 {
					s = min(s, w[t]/gpus[t]/e)
				}
			}
			size[i] = float64(j.Steps) * s
		}
		return size
	}
	for _, w := range priceGrid(gpus, boundGrid) {
		s, after := sizes(w), 0.0
		for i := len(work) - 1; i >= 0; i-- {
			after += s[i]
			b.Makespan = max(b.Makespan, work[i].Arrival+after)
		}
	}
	fluid := 0.0
	for _, w := range priceGrid(gpus, boundGridJCT) {
		fluid = max(fluid, fluidSRPT(work, sizes(w)))
	}
	b.AvgJCT = max(sumLeast, fluid) / float64(len(work))
	return b, nil
}

// priceGrid lists the price weights w_t = N_t·p_t on the types the cluster has, each a multiple
// of 1/steps, summing to 1.
func priceGrid(gpus typeVec, steps int) []typeVec {
	var types []int
	for t, n := range gpus {
		if n > 0 {
			types = append(types, t)
		}
	}
	var out []typeVec
	var walk func(k, left int, w typeVec)
	walk = func(k, left int, w typeVec) {
		if k == len(types)-1 {
			w[types[k]] = float64(left) / float64(steps)
			out = append(out, w)
			return
		}
		for n := 0; n <= left; n++ {
			w[types[k]] = float64(n) / float64(steps)
			walk(k+1, left-n, w)
		}
	}
	if len(types) > 0 {
		walk(0, steps, typeVec{})
	}
	return out
}

// boundSpeeds are the most steps per second job j can run (fastest) and per GPU-second on each
// GPU type of the cluster (eff): alone, or (share) sharing its GPUs with any job type of the model
// (half the GPUs its own), at the highest factor of its profile.
func boundSpeeds(c Cluster, m SpeedModel, j Job, share bool) (fastest float64, eff typeVec, err error) {
	prof, err := m.Sens.Profile(j.Type)
	if err != nil {
		return 0, eff, err
	}
	f := 0.0
	for _, row := range prof.tput {
		f = max(f, slices.Max(row))
	}
	var others []string
	if share {
		others = m.Sens.JobTypes()
	}
	for k, t := range GPUTypes {
		if fc, _ := c.FairShare(t); fc == 0 {
			continue // the cluster has no server of this type
		}
		for _, g := range []int{1, 2, 4, 8} {
			v, ok := m.Tput.Alone(t, j.Type, g)
			if !ok || v <= 0 {
				continue
			}
			fastest, eff[k] = max(fastest, v*f), max(eff[k], v*f/float64(g))
			for _, o := range others {
				if self, _, ok := m.Tput.Paired(t, j.Type, g, o, g); ok {
					fastest, eff[k] = max(fastest, self*f), max(eff[k], 2*self*f/float64(g))
				}
			}
		}
	}
	if fastest == 0 {
		return 0, eff, fmt.Errorf("job %d: no throughput for %q on any GPU type and count of the cluster", j.ID, j.Type)
	}
	return fastest, eff, nil
}

// fluidSRPT is the sum of flow times (finish − arrival) of preemptive shortest-remaining-first on
// one machine of rate 1, jobs of size[i] arriving at work[i].Arrival (in arrival order).
func fluidSRPT(work []Job, size []float64) float64 {
	q := &srptQueue{}
	now, next, sum := work[0].Arrival, 0, 0.0
	for next < len(work) || q.Len() > 0 {
		for next < len(work) && work[next].Arrival <= now {
			heap.Push(q, srptJob{next, size[next]})
			next++
		}
		if q.Len() == 0 {
			now = work[next].Arrival
			continue
		}
		head := &(*q)[0]
		done := now + head.left
		if next < len(work) && work[next].Arrival < done {
			head.left -= work[next].Arrival - now
			now = work[next].Arrival
			continue // the head's remaining only shrank: still the least
		}
		now = done
		sum += now - work[head.i].Arrival
		heap.Pop(q)
	}
	return sum
}

type srptJob struct {
	i    int
	left float64
}

// srptQueue is a min-heap of jobs by remaining size, then arrival.
type srptQueue []srptJob

func (q srptQueue) Len() int { return len(q) }
func (q srptQueue) Less(a, b int) bool {
	return q[a].left < q[b].left || q[a].left == q[b].left && q[a].i < q[b].i
}
func (q srptQueue) Swap(a, b int) { q[a], q[b] = q[b], q[a] }
func (q *srptQueue) Push(x any)   { *q = append(*q, x.(srptJob)) }
func (q *srptQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}
