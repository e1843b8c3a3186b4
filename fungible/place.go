package fungible

import (
	"cmp"
	"slices"
)

// room is what a server can still give, in the ledger's units (milli-CPUs, MB).
type room struct{ cpu, mem int64 }

func (p *planner) room(server int) room {
	c, m := p.l.Room(server)
	return room{milli(c), milli(m)}
}

// fitGPUs is how many GPUs at cpu and mem each a server's room holds.
func fitGPUs(r room, cpu, mem int64) int {
	n := 1 << 30
	if cpu > 0 {
		n = min(n, int(r.cpu/cpu))
	}
	if mem > 0 {
		n = min(n, int(r.mem/mem))
	}
	return max(n, 0)
}

// freeGPUs counts the unheld GPUs of a type.
func (p *planner) freeGPUs(gpuType string) int {
	n := 0
	for _, i := range p.servers[gpuType] {
		n += p.l.servers[i].free
	}
	return n
}

// cand is a server place can take GPUs from: its free GPUs and how many of them its room holds.
type cand struct {
	server, free, fit int
}

// place finds gpus unheld GPUs of gpuType with cpus and mem per GPU of room, as Synergy places:
// a job of more than one GPU goes whole onto the server with the fewest free GPUs that can hold
// it; otherwise, or when no server can, it takes GPUs from the servers with the fewest free GPUs
// first. extra, when not nil, adds room the caller can free on a server (TUNE's shrinking).
func (p *planner) place(gpuType string, gpus int, cpus, mem float64, extra func(server int) room) ([]Part, bool) {
	cands, total := p.candidates(gpuType, milli(cpus), milli(mem), extra)
	if total < gpus {
		return nil, false
	}
	slices.SortStableFunc(cands, func(a, b cand) int { return cmp.Compare(a.free, b.free) })
	if gpus > 1 {
		for _, c := range cands {
			if c.fit >= gpus {
				return []Part{{Server: c.server, GPUs: p.l.FreeGPUs(c.server)[:gpus]}}, true
			}
		}
	}
	var parts []Part
	for _, c := range cands {
		k := min(c.fit, gpus)
		parts = append(parts, Part{Server: c.server, GPUs: p.l.FreeGPUs(c.server)[:k]})
		if gpus -= k; gpus == 0 {
			break
		}
	}
	return parts, true
}

// candidates lists the servers of gpuType with free GPUs that cpu and mm per GPU fit on, and
// how many GPUs they hold in all (place succeeds exactly when that covers its count).
func (p *planner) candidates(gpuType string, cpu, mm int64, extra func(server int) room) ([]cand, int) {
	cands := p.cands[:0]
	total := 0
	for _, i := range p.servers[gpuType] {
		free := p.l.servers[i].free
		if free == 0 {
			continue
		}
		r := p.room(i)
		if extra != nil {
			e := extra(i)
			r.cpu, r.mem = r.cpu+e.cpu, r.mem+e.mem
		}
		fit := min(free, fitGPUs(r, cpu, mm))
		if fit == 0 {
			continue
		}
		cands = append(cands, cand{i, free, fit})
		total += fit
	}
	p.cands = cands // reused by the next call
	return cands, total
}

// alloc is the allocation of job j on parts.
func alloc(j Job, gpuType string, parts []Part, cpus, mem float64, partner int) Allocation {
	return Allocation{Job: j.ID, JobType: j.Type, GPUType: gpuType, Parts: parts, CPUsPerGPU: cpus, MemPerGPU: mem, Partner: partner}
}
