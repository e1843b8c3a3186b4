package fungible

import "sort"

func init() { register("synergy-tune", Tune) }

// Tune is Synergy's TUNE. Each job, on the fastest GPU type with enough free GPUs first, asks for
// its best-case CPUs and memory per GPU (its profile's, Profile.BestCPUs and BestMem); if that
// does not fit, for the fair share (each resource the smaller of its best case and the type's
// FairShare); if that does not fit either, jobs on the servers it would use that hold more than the
// fair share are shrunk back to it, in Synergy's order (jobs on one server first, then the most
// CPUs per GPU, then the most memory per GPU), until it fits. No job is shrunk below the fair
// share and no job starts below it, so every job holds at least min(best case, fair share) of
// each resource.
func Tune(l *Ledger, m SpeedModel, queue []Job) (Plan, error) {
	p := newPlanner(l, m)
	return p.each(queue, func(j Job, prof Profile, types []string) error {
		for _, t := range types {
			if p.freeGPUs(t) < j.GPUs {
				continue
			}
			if ok, err := p.tuneOn(j, t, prof); ok || err != nil {
				return err
			}
		}
		return nil
	})
}

// tuneOn tries TUNE's three steps for job j on GPU type t.
func (p *planner) tuneOn(j Job, t string, prof Profile) (bool, error) {
	fc, fm := p.fairShare(t)
	start := func(parts []Part, cpus, mem float64) (bool, error) {
		return true, p.do(Change{Start, alloc(j, t, parts, cpus, mem, NoPartner)})
	}
	if parts, ok := p.place(t, j.GPUs, prof.BestCPUs, prof.BestMem, nil); ok {
		return start(parts, prof.BestCPUs, prof.BestMem)
	}
	cpus, mem := min(prof.BestCPUs, fc), min(prof.BestMem, fm)
	if parts, ok := p.place(t, j.GPUs, cpus, mem, nil); ok {
		return start(parts, cpus, mem)
	}
	if p.excess == nil {
		p.excess = make([]room, len(p.l.Cluster()))
		for _, id := range p.l.Jobs() {
			a, _ := p.l.Get(id)
			p.addExcess(a, 1)
		}
	}
	parts, ok := p.place(t, j.GPUs, cpus, mem, func(s int) room { return p.excess[s] })
	if !ok {
		return false, nil
	}
	for _, part := range parts {
		if err := p.shrinkFor(part.Server, int64(len(part.GPUs)), milli(cpus), milli(mem), fc, fm); err != nil {
			return false, err
		}
	}
	return start(parts, cpus, mem)
}

// addExcess adds sign × what a holds above its type's fair share per GPU to its servers' excess.
func (p *planner) addExcess(a Allocation, sign int64) {
	fc, fm := p.fairShare(a.GPUType)
	dc, dm := max(0, milli(a.CPUsPerGPU)-milli(fc)), max(0, milli(a.MemPerGPU)-milli(fm))
	for _, part := range a.Parts {
		n := sign * int64(len(part.GPUs))
		p.excess[part.Server].cpu += dc * n
		p.excess[part.Server].mem += dm * n
	}
}

// shrinkFor shrinks jobs on server s back to the fair share until gpus GPUs at cpu and mem fit.
func (p *planner) shrinkFor(s int, gpus, cpu, mem int64, fc, fm float64) error {
	type peer struct {
		a       Allocation
		servers int
	}
	var peers []peer
	for _, id := range p.l.Jobs() {
		a, _ := p.l.Get(id)
		on := false
		for _, part := range a.Parts {
			on = on || part.Server == s
		}
		if on && (a.CPUsPerGPU > fc || a.MemPerGPU > fm) {
			peers = append(peers, peer{a, len(a.Parts)})
		}
	}
	sort.SliceStable(peers, func(x, y int) bool {
		a, b := peers[x], peers[y]
		if a.servers != b.servers {
			return a.servers < b.servers
		}
		if a.a.CPUsPerGPU != b.a.CPUsPerGPU {
			return a.a.CPUsPerGPU > b.a.CPUsPerGPU
		}
		return a.a.MemPerGPU > b.a.MemPerGPU
	})
	for _, pe := range peers {
		if r := p.room(s); r.cpu >= gpus*cpu && r.mem >= gpus*mem {
			return nil
		}
		shrunk := pe.a
		shrunk.CPUsPerGPU, shrunk.MemPerGPU = min(shrunk.CPUsPerGPU, fc), min(shrunk.MemPerGPU, fm)
		if err := p.do(Change{Resize, shrunk}); err != nil {
			return err
		}
	}
	return nil
}
