package fungible

func init() { register("integrated-greedy", Greedy) }

// Greedy is the integrated greedy rule: each job in turn takes the whole allocation (GPU type, any
// GPU count its type has a throughput for, CPUs and memory per GPU on Synergy's grid, and a
// partner or none) with the best measured speed per unit of resource held, or waits when nothing
// fits. Speed is normalised by the job's throughput alone at its requested count on the fastest
// type; a partner's loss (its paired over its alone speed, less 1) counts against sharing. A unit
// of resource is one GPU with the type's fair share of CPUs and memory: an allocation holds, per
// GPU, the mean of its GPU (1, or 1/2 when shared), CPU and memory shares in those units.
func Greedy(l *Ledger, m SpeedModel, queue []Job) (Plan, error) {
	p := newPlanner(l, m)
	return p.each(queue, func(j Job, prof Profile, types []string) error {
		c, err := p.bestWhole(j, prof, types)
		if err != nil || c.score <= 0 {
			return err
		}
		return p.do(c.change)
	})
}

type candidate struct {
	score  float64
	change Change
}

// bestWhole scores every whole allocation of j and returns the best (score 0: none fits).
// Candidates are visited in a fixed order (GPU types, counts, CPUs, memory, partners by job) and
// only a strictly better score replaces the best, so ties go to the first.
func (p *planner) bestWhole(j Job, prof Profile, types []string) (candidate, error) {
	ref, _ := p.m.Tput.Alone(types[0], j.Type, j.GPUs)
	running := p.l.Jobs()
	var best candidate
	consider := func(score float64, c Change) {
		if score > best.score {
			best = candidate{score, c}
		}
	}
	// The grid's lowest point is measured for every profile; an allocation's other factors do
	// not depend on its CPUs and memory, so they are measured once per GPU type and count (or
	// partner) and only the resource factor varies over the grid.
	lowCPU, lowMem := prof.cpus[0], prof.mem[0]
	for _, t := range p.types {
		fc, fm := p.fairShare(t)
		held := func(g int, cpus, mem, gpuShare float64) float64 {
			return float64(g) * (gpuShare + cpus/fc + mem/fm) / 3
		}
		free := p.freeGPUs(t)
		for g := 1; g <= free; g++ {
			if v, ok := p.m.Tput.Alone(t, j.Type, g); !ok || v <= 0 {
				continue
			}
			parts, ok := p.place(t, g, lowCPU, lowMem, nil)
			if !ok {
				continue
			}
			f, err := p.m.Factors(alloc(j, t, parts, lowCPU, lowMem, NoPartner), nil)
			if err != nil {
				return candidate{}, err
			}
			// What does not fit at some CPUs and memory does not fit at more of either.
		grid:
			for _, cpus := range prof.cpus {
				for k, mem := range prof.mem {
					parts, ok := p.place(t, g, cpus, mem, nil)
					if !ok && k == 0 {
						break grid
					}
					if !ok {
						break
					}
					f.Resource, _ = prof.Factor(cpus, mem)
					consider(f.Speed()/ref/held(g, cpus, mem, 1), Change{Start, alloc(j, t, parts, cpus, mem, NoPartner)})
				}
			}
		}
		for _, id := range running {
			in, _ := p.l.Get(id)
			g := in.GPUCount()
			if in.GPUType != t || in.Partner != NoPartner || !p.m.CanShare(t, j.Type, in.JobType, g) || !p.fitsOn(in.Parts, lowCPU, lowMem) {
				continue
			}
			if v, ok := p.m.Tput.Alone(t, j.Type, g); !ok || v <= 0 {
				continue
			}
			low := alloc(j, t, in.Parts, lowCPU, lowMem, in.Job)
			f, err := p.m.Factors(low, &in)
			if err != nil {
				return candidate{}, err
			}
			inAlone, err := p.m.Speed(in, nil)
			if err != nil {
				return candidate{}, err
			}
			other, err := p.m.Speed(in, &low)
			if err != nil {
				return candidate{}, err
			}
		share:
			for _, cpus := range prof.cpus {
				for k, mem := range prof.mem {
					fits := p.fitsOn(in.Parts, cpus, mem)
					if !fits && k == 0 {
						break share
					}
					if !fits {
						break
					}
					f.Resource, _ = prof.Factor(cpus, mem)
					gain := f.Speed()/ref + other/inAlone - 1
					consider(gain/held(g, cpus, mem, 0.5), Change{Start, alloc(j, t, in.Parts, cpus, mem, in.Job)})
				}
			}
		}
	}
	return best, nil
}

// fitsOn reports whether every part's server has room for cpus and mem on each of its GPUs.
func (p *planner) fitsOn(parts []Part, cpus, mem float64) bool {
	for _, part := range parts {
		if fitGPUs(p.room(part.Server), milli(cpus), milli(mem)) < len(part.GPUs) {
			return false
		}
	}
	return true
}
