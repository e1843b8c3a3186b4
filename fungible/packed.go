package fungible

import (
	"slices"

	"github.com/schedrl/schedrl/jobs"
)

func init() { registerPolicy("max_min_fairness_packed", func() RoundPolicy { return newPacked() }) }

// packed is Gavel's max_min_fairness_packed in the fungible world. Its LP (packedLP) gives each
// job a time fraction alone on each GPU type and with each other job on the same GPUs, from the
// jobs' measured speeds: alone at the requested GPU count and the type's fair share of CPUs and
// memory, paired at Gavel's pair throughputs (same GPU count, [0, 0] cannot share) with the fair
// share split evenly between the two, each job's Synergy factor at its half, so a pair costs what
// the world charges it. The LP is re-solved whenever the set of present jobs changes. Each round
// a combination's priority is Gavel's: its fraction over the fraction of time it has received
// since the solve (a combination not served yet first); handOut starts combinations down that
// order, each job once; jobs the LP gives nothing run alone on GPUs left over, faster types first.
type packed struct {
	jobs   []int // r.Jobs' indices at the last solve
	since  float64
	alone  map[int][jobs.NumGPUs]float64    // job index -> fraction alone per type
	paired map[[2]int][jobs.NumGPUs]float64 // job indices (lower first) -> fraction together per type
	got    map[ranKey]float64               // seconds each combination has run since the solve
	ran    []ranKey                         // combinations started in the last round
	before map[int][jobs.NumGPUs]float64    // job index -> its Service when the last round began
	coef   map[coefKey]float64              // measured speed, by job types, count, GPU type
}

// ranKey is a combination as the planner counts its time: job indices (b < 0 alone), GPU type.
type ranKey struct {
	a, b int
	g    jobs.GPU
}

// coefKey names a speed the LP reads: a alone (b empty) or a paired with b, on gpus of type g.
type coefKey struct {
	a, b string
	gpus int
	g    jobs.GPU
}

func newPacked() *packed {
	return &packed{got: map[ranKey]float64{}, before: map[int][jobs.NumGPUs]float64{}, coef: map[coefKey]float64{}}
}

func (p *packed) Plan(l *Ledger, m SpeedModel, s RoundState) (Plan, error) {
	r, present := s.Round, s.jobs()
	pos := make(map[int]int, len(r.Jobs))
	for i, j := range r.Jobs {
		pos[j.Index] = i
	}
	p.account(r, pos)
	if !slices.EqualFunc(p.jobs, r.Jobs, func(i int, j *jobs.JobState) bool { return i == j.Index }) {
		if err := p.solve(l, m, r, present); err != nil {
			return Plan{}, err
		}
	}
	elapsed := r.Now - p.since
	rank := func(k ranKey, frac float64) [3]float64 {
		got := p.got[k]
		if got <= 0 || elapsed <= 0 {
			return [3]float64{2, frac}
		}
		return [3]float64{1, frac * elapsed / got, frac}
	}
	var cs []combo
	for i, j := range r.Jobs {
		best := 0.0
		for g := range jobs.GPU(jobs.NumGPUs) {
			if r.Cluster.GPUs[g] >= j.Type.Scale {
				best = max(best, j.Throughput[g])
			}
		}
		for g := range jobs.GPU(jobs.NumGPUs) {
			if j.Throughput[g] <= 0 || r.Cluster.GPUs[g] < j.Type.Scale {
				continue
			}
			if f := p.alone[j.Index][g]; f > 1e-9 {
				cs = append(cs, combo{a: i, b: -1, g: g, rank: rank(ranKey{j.Index, -1, g}, f)})
			} else {
				cs = append(cs, combo{a: i, b: -1, g: g, rank: [3]float64{0, j.Throughput[g] / best}})
			}
		}
	}
	for k, fr := range p.paired {
		for g, f := range fr {
			if f > 1e-9 {
				cs = append(cs, combo{a: pos[k[0]], b: pos[k[1]], g: jobs.GPU(g), rank: rank(ranKey{k[0], k[1], jobs.GPU(g)}, f)})
			}
		}
	}
	plan, err := handOut(l, m, present, cs)
	if err != nil {
		return Plan{}, err
	}
	p.record(plan, r, present)
	return plan, nil
}

// account adds last round's run time to the combinations it started: each member's service on
// the type since then (a pair: the shorter of its members still present).
func (p *packed) account(r *jobs.Round, pos map[int]int) {
	for _, k := range p.ran {
		run, seen := 0.0, false
		for _, idx := range [2]int{k.a, k.b} {
			i, ok := pos[idx]
			if idx < 0 || !ok {
				continue
			}
			d := r.Jobs[i].Service[k.g] - p.before[idx][k.g]
			if !seen || d < run {
				run, seen = d, true
			}
		}
		if seen {
			p.got[k] += run
		}
	}
}

// record remembers the combinations a plan starts and its jobs' service before the round.
func (p *packed) record(plan Plan, r *jobs.Round, present []Job) {
	p.ran = p.ran[:0]
	clear(p.before)
	index := make(map[int]int, len(present))
	for i, j := range present {
		index[j.ID] = r.Jobs[i].Index
	}
	for i, j := range present {
		a, ok := plan.Ledger.Get(j.ID)
		if !ok {
			continue
		}
		p.before[r.Jobs[i].Index] = r.Jobs[i].Service
		self, peer := r.Jobs[i].Index, -1
		if a.Partner != NoPartner {
			if peer = index[a.Partner]; peer < self {
				continue // counted from the lower index
			}
		}
		g, _ := gpuOf(a.GPUType)
		p.ran = append(p.ran, ranKey{self, peer, g})
	}
}

// solve sets up and solves the LP over the present jobs' classes and spreads each class's
// fractions evenly over its jobs (and pairs of jobs), the symmetric optimum.
func (p *packed) solve(l *Ledger, m SpeedModel, r *jobs.Round, present []Job) error {
	c := l.Cluster()
	lp := packedLP{types: c.Types()}
	var types []jobs.GPU
	total := 0.0
	for _, t := range lp.types {
		g, _ := gpuOf(t)
		types = append(types, g)
		lp.cap = append(lp.cap, float64(r.Cluster.GPUs[g]))
		total += float64(r.Cluster.GPUs[g])
	}
	classOf := make([]int, len(present))
	byKey := map[jobKey]int{}
	var keys []jobKey
	var members [][]int
	for i, j := range present {
		k := jobKey{j.Type, j.GPUs}
		ci, ok := byKey[k]
		if !ok {
			ci = len(keys)
			byKey[k] = ci
			keys = append(keys, k)
			members = append(members, nil)
		}
		classOf[i] = ci
		members[ci] = append(members[ci], i)
	}
	// norm is each class's GPU count over its proportional throughput (Gavel's normalisation).
	norm := make([]float64, len(keys))
	for ci, k := range keys {
		cl := lpClass{n: len(members[ci]), gpus: k.gpus, alone: make([]float64, len(types))}
		prop := 0.0
		for gi, g := range types {
			if v, ok := m.Tput.Alone(GPUTypes[g], k.jobType, k.gpus); !ok || v <= 0 || r.Cluster.GPUs[g] < k.gpus {
				continue
			}
			v, err := p.speed(m, c, coefKey{k.jobType, "", k.gpus, g})
			if err != nil {
				return err
			}
			cl.alone[gi] = v
			prop += v * lp.cap[gi] / total
		}
		norm[ci] = float64(k.gpus) / prop
		for gi := range cl.alone {
			cl.alone[gi] *= norm[ci]
		}
		lp.classes = append(lp.classes, cl)
	}
	for ci, kc := range keys {
		for di := ci; di < len(keys); di++ {
			kd := keys[di]
			if kd.gpus != kc.gpus || ci == di && len(members[ci]) < 2 {
				continue
			}
			pr := lpPair{c: ci, d: di, self: make([]float64, len(types)), peer: make([]float64, len(types))}
			useful := false
			for gi, g := range types {
				ac, ad := lp.classes[ci].alone[gi], lp.classes[di].alone[gi]
				if ac <= 0 || ad <= 0 || !m.CanShare(GPUTypes[g], kc.jobType, kd.jobType, kc.gpus) {
					continue
				}
				s, err := p.speed(m, c, coefKey{kc.jobType, kd.jobType, kc.gpus, g})
				if err != nil {
					return err
				}
				o, err := p.speed(m, c, coefKey{kd.jobType, kc.jobType, kc.gpus, g})
				if err != nil {
					return err
				}
				if s <= 0 || o <= 0 {
					continue
				}
				s, o = s*norm[ci], o*norm[di]
				// A pair no faster than time-slicing its two jobs alone on the same GPUs never
				// improves the optimum: leave it out, the LP stays small.
				if s/ac+o/ad <= 1 && s <= ac && o <= ad {
					continue
				}
				pr.self[gi], pr.peer[gi], useful = s, o, true
			}
			if useful {
				lp.pairs = append(lp.pairs, pr)
			}
		}
	}
	sol, err := lp.solve()
	if err != nil {
		return err
	}
	p.jobs, p.since = p.jobs[:0], r.Now
	p.alone, p.paired = map[int][jobs.NumGPUs]float64{}, map[[2]int][jobs.NumGPUs]float64{}
	clear(p.got)
	for i, j := range r.Jobs {
		p.jobs = append(p.jobs, j.Index)
		var f [jobs.NumGPUs]float64
		ci := classOf[i]
		for gi, g := range types {
			f[g] = sol.alone[ci][gi] / float64(len(members[ci]))
		}
		p.alone[j.Index] = f
	}
	for k, pr := range lp.pairs {
		nc, nd := float64(len(members[pr.c])), float64(len(members[pr.d]))
		per := nc * nd
		if pr.c == pr.d {
			per = nc * (nc - 1) / 2
		}
		for gi, g := range types {
			y := sol.paired[k][gi]
			if y <= 1e-9 {
				continue
			}
			for _, a := range members[pr.c] {
				for _, b := range members[pr.d] {
					ia, ib := r.Jobs[a].Index, r.Jobs[b].Index
					if ia == ib || pr.c == pr.d && ia > ib {
						continue
					}
					key := [2]int{min(ia, ib), max(ia, ib)}
					f := p.paired[key]
					f[g] += y / per
					p.paired[key] = f
				}
			}
		}
	}
	return nil
}

// halvesMeasured is 1 when Synergy's grid covers both halves of a pair's fair share, else 0: a
// pair whose halves fall below the lowest measured point cannot form (as in gandiva).
func (p *packed) halvesMeasured(m SpeedModel, a, b Allocation) (float64, error) {
	for _, x := range [2]Allocation{a, b} {
		prof, err := m.Sens.Profile(x.JobType)
		if err != nil {
			return 0, err
		}
		if !measured(prof, x.CPUsPerGPU, x.MemPerGPU) {
			return 0, nil
		}
	}
	return 1, nil
}

// speed is a measured speed the LP reads (cached): a job type alone on gpus GPUs of type g at its
// fair share, or paired with another at half of it each (0 where the halves are not measured).
func (p *packed) speed(m SpeedModel, c Cluster, k coefKey) (float64, error) {
	if v, ok := p.coef[k]; ok {
		return v, nil
	}
	t := GPUTypes[k.g]
	fc, fm := c.FairShare(t)
	parts := []Part{{GPUs: make([]int, k.gpus)}}
	a := Allocation{JobType: k.a, GPUType: t, Parts: parts, CPUsPerGPU: fc, MemPerGPU: fm, Partner: NoPartner}
	var v float64
	var err error
	if k.b == "" {
		v, err = m.Speed(a, nil)
	} else {
		keepC, giveC := split(fc)
		keepM, giveM := split(fm)
		a.CPUsPerGPU, a.MemPerGPU = keepC, keepM
		b := Allocation{JobType: k.b, GPUType: t, Parts: parts, CPUsPerGPU: giveC, MemPerGPU: giveM, Partner: NoPartner}
		if v, err = p.halvesMeasured(m, a, b); err == nil && v > 0 {
			v, err = m.Speed(a, &b)
		}
	}
	if err != nil {
		return 0, err
	}
	p.coef[k] = v
	return v, nil
}
