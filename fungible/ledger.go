package fungible

import (
	"fmt"
	"math"
	"slices"
	"sort"
)

// NoPartner marks an allocation that shares its GPUs with no other job.
const NoPartner = -1

// Part is the GPUs an allocation takes on one server (an index into the Cluster).
type Part struct {
	Server int
	GPUs   []int
}

// Allocation is a whole decision for one job: GPU type, servers and GPU indices, CPUs and GB of
// memory per GPU (the same on every part), and the job it shares those GPUs with, if any.
type Allocation struct {
	Job        int
	JobType    string
	GPUType    string
	Parts      []Part
	CPUsPerGPU float64
	MemPerGPU  float64
	Partner    int
}

// GPUCount is the number of GPUs the allocation spans.
func (a Allocation) GPUCount() int {
	n := 0
	for _, p := range a.Parts {
		n += len(p.GPUs)
	}
	return n
}

// CapacityError says that an allocation does not fit a server.
type CapacityError struct {
	Server   string
	Resource string // "gpu", "cpu" or "memory"
	Detail   string
}

func (e *CapacityError) Error() string {
	return fmt.Sprintf("server %s: %s: %s", e.Server, e.Resource, e.Detail)
}

// Ledger holds the allocations in force on a cluster and refuses any that over-commits a server.
// CPUs are kept in milli-cores and memory in MB, so that applying and releasing never drifts.
type Ledger struct {
	cluster Cluster
	servers []serverUse
	allocs  map[int]Allocation
}

type serverUse struct {
	holders         [][2]int // per GPU: up to two jobs, NoPartner where empty
	free            int      // GPUs no job holds
	cpuMilli, memMB int64    // held
	capCPU, capMem  int64
}

// NewLedger is an empty ledger over c.
func NewLedger(c Cluster) *Ledger {
	l := &Ledger{cluster: c, servers: make([]serverUse, len(c)), allocs: map[int]Allocation{}}
	for i, s := range c {
		u := &l.servers[i]
		u.holders, u.free = make([][2]int, s.GPUs), s.GPUs
		for g := range u.holders {
			u.holders[g] = [2]int{NoPartner, NoPartner}
		}
		u.capCPU, u.capMem = milli(s.CPUs), milli(s.MemGB)
	}
	return l
}

func milli(x float64) int64 { return int64(math.Round(x * 1000)) }

// Cluster is the ledger's cluster.
func (l *Ledger) Cluster() Cluster { return l.cluster }

// Clone is an independent copy.
func (l *Ledger) Clone() *Ledger {
	c := &Ledger{cluster: l.cluster, servers: make([]serverUse, len(l.servers)), allocs: make(map[int]Allocation, len(l.allocs))}
	for i, u := range l.servers {
		u.holders = slices.Clone(u.holders)
		c.servers[i] = u
	}
	for k, a := range l.allocs {
		c.allocs[k] = a
	}
	return c
}

// Get is a job's allocation.
func (l *Ledger) Get(job int) (Allocation, bool) { a, ok := l.allocs[job]; return a, ok }

// Jobs lists the jobs holding an allocation, sorted.
func (l *Ledger) Jobs() []int {
	out := make([]int, 0, len(l.allocs))
	for j := range l.allocs {
		out = append(out, j)
	}
	sort.Ints(out)
	return out
}

// FreeGPUs lists the GPUs of a server no job holds.
func (l *Ledger) FreeGPUs(server int) []int {
	out := make([]int, 0, l.servers[server].free)
	for g, h := range l.servers[server].holders {
		if h[0] == NoPartner {
			out = append(out, g)
		}
	}
	return out
}

// Room is the CPUs and GB of memory a server has left.
func (l *Ledger) Room(server int) (cpus, mem float64) {
	u := l.servers[server]
	return float64(u.capCPU-u.cpuMilli) / 1000, float64(u.capMem-u.memMB) / 1000
}

// Apply adds an allocation. It must name existing servers of its GPU type and distinct GPUs, and
// fit every server's GPUs, CPUs and memory; with a partner, that job must be held, have no
// partner, and span exactly the same GPUs, and the two become each other's partners.
func (l *Ledger) Apply(a Allocation) error {
	if _, dup := l.allocs[a.Job]; dup {
		return fmt.Errorf("job %d already holds an allocation", a.Job)
	}
	if a.GPUCount() == 0 {
		return fmt.Errorf("job %d: allocation has no GPUs", a.Job)
	}
	if !(a.CPUsPerGPU >= 0) || !(a.MemPerGPU >= 0) {
		return fmt.Errorf("job %d: %g CPUs and %g GB per GPU, want >= 0", a.Job, a.CPUsPerGPU, a.MemPerGPU)
	}
	var partner Allocation
	if a.Partner != NoPartner {
		p, ok := l.allocs[a.Partner]
		switch {
		case !ok:
			return fmt.Errorf("job %d: partner job %d holds no allocation", a.Job, a.Partner)
		case p.Partner != NoPartner:
			return fmt.Errorf("job %d: partner job %d already shares with job %d", a.Job, a.Partner, p.Partner)
		case !sameGPUs(a, p):
			return fmt.Errorf("job %d: shares with job %d but spans other GPUs", a.Job, a.Partner)
		}
		partner = p
	}
	cpu, mem := milli(a.CPUsPerGPU), milli(a.MemPerGPU)
	for pi, p := range a.Parts {
		if p.Server < 0 || p.Server >= len(l.cluster) {
			return fmt.Errorf("job %d: no server %d (the cluster has %d)", a.Job, p.Server, len(l.cluster))
		}
		s, u := l.cluster[p.Server], &l.servers[p.Server]
		if s.GPUType != a.GPUType {
			return &CapacityError{s.Name, "gpu", fmt.Sprintf("job %d asks for %s GPUs, the server has %s", a.Job, a.GPUType, s.GPUType)}
		}
		for gi, g := range p.GPUs {
			if g < 0 || g >= s.GPUs {
				return &CapacityError{s.Name, "gpu", fmt.Sprintf("job %d asks for GPU %d, the server has %d", a.Job, g, s.GPUs)}
			}
			if namedBefore(a.Parts, pi, gi) {
				return &CapacityError{s.Name, "gpu", fmt.Sprintf("job %d names GPU %d twice", a.Job, g)}
			}
			if h := u.holders[g]; h[0] != NoPartner && (a.Partner == NoPartner || h[1] != NoPartner) {
				return &CapacityError{s.Name, "gpu", fmt.Sprintf("job %d asks for GPU %d, held by job %d", a.Job, g, h[0])}
			}
		}
	}
	if err := l.fits(a.Job, "asks for", gpusPerServer(a), cpu, mem); err != nil {
		return err
	}
	for _, p := range a.Parts {
		u := &l.servers[p.Server]
		for _, g := range p.GPUs {
			if u.holders[g][0] == NoPartner {
				u.holders[g][0] = a.Job
				u.free--
			} else {
				u.holders[g][1] = a.Job
			}
		}
		u.cpuMilli += cpu * int64(len(p.GPUs))
		u.memMB += mem * int64(len(p.GPUs))
	}
	if a.Partner != NoPartner {
		partner.Partner = a.Job
		l.allocs[partner.Job] = partner
	}
	l.allocs[a.Job] = a
	return nil
}

// Release removes a job's allocation; its partner, if any, keeps its GPUs alone.
func (l *Ledger) Release(job int) error {
	a, ok := l.allocs[job]
	if !ok {
		return fmt.Errorf("job %d holds no allocation", job)
	}
	cpu, mem := milli(a.CPUsPerGPU), milli(a.MemPerGPU)
	for _, p := range a.Parts {
		u := &l.servers[p.Server]
		for _, g := range p.GPUs {
			h := &u.holders[g]
			if h[0] == job {
				h[0], h[1] = h[1], NoPartner
				if h[0] == NoPartner {
					u.free++
				}
			} else {
				h[1] = NoPartner
			}
		}
		u.cpuMilli -= cpu * int64(len(p.GPUs))
		u.memMB -= mem * int64(len(p.GPUs))
	}
	if a.Partner != NoPartner {
		p := l.allocs[a.Partner]
		p.Partner = NoPartner
		l.allocs[p.Job] = p
	}
	delete(l.allocs, job)
	return nil
}

// Resize changes a held job's CPUs and memory per GPU in place, checked like Apply.
func (l *Ledger) Resize(job int, cpus, mem float64) error {
	a, ok := l.allocs[job]
	if !ok {
		return fmt.Errorf("job %d holds no allocation", job)
	}
	if !(cpus >= 0) || !(mem >= 0) {
		return fmt.Errorf("job %d: %g CPUs and %g GB per GPU, want >= 0", job, cpus, mem)
	}
	dc, dm := milli(cpus)-milli(a.CPUsPerGPU), milli(mem)-milli(a.MemPerGPU)
	if err := l.fits(job, "grows by", gpusPerServer(a), dc, dm); err != nil {
		return err
	}
	for _, p := range a.Parts {
		n := int64(len(p.GPUs))
		l.servers[p.Server].cpuMilli += dc * n
		l.servers[p.Server].memMB += dm * n
	}
	a.CPUsPerGPU, a.MemPerGPU = cpus, mem
	l.allocs[job] = a
	return nil
}

// namedBefore reports whether GPU parts[i].GPUs[j] of its server is named earlier in the parts
// (an allocation spans a few GPUs, so a scan beats a set).
func namedBefore(parts []Part, i, j int) bool {
	g, srv := parts[i].GPUs[j], parts[i].Server
	for k := 0; k <= i; k++ {
		n := len(parts[k].GPUs)
		if k == i {
			n = j
		}
		if parts[k].Server == srv && slices.Contains(parts[k].GPUs[:n], g) {
			return true
		}
	}
	return false
}

// serverGPUs is an allocation's GPU count on one server.
type serverGPUs struct {
	server int
	n      int64
}

// gpusPerServer counts an allocation's GPUs on each server it names (two parts may name the same
// one), in the order the parts first name them.
func gpusPerServer(a Allocation) []serverGPUs {
	var out []serverGPUs
	for _, p := range a.Parts {
		i := slices.IndexFunc(out, func(x serverGPUs) bool { return x.server == p.Server })
		if i < 0 {
			i = len(out)
			out = append(out, serverGPUs{p.Server, 0})
		}
		out[i].n += int64(len(p.GPUs))
	}
	return out
}

// fits checks that cpu and mem more per GPU, on n GPUs of each server, stay within capacity.
func (l *Ledger) fits(job int, verb string, n []serverGPUs, cpu, mem int64) error {
	for _, x := range n {
		s, u, k := l.cluster[x.server], l.servers[x.server], x.n
		if u.cpuMilli+cpu*k > u.capCPU {
			return &CapacityError{s.Name, "cpu", fmt.Sprintf("job %d %s %g CPUs, %g of %g are free", job, verb, float64(cpu*k)/1000, float64(u.capCPU-u.cpuMilli)/1000, s.CPUs)}
		}
		if u.memMB+mem*k > u.capMem {
			return &CapacityError{s.Name, "memory", fmt.Sprintf("job %d %s %g GB, %g of %g GB are free", job, verb, float64(mem*k)/1000, float64(u.capMem-u.memMB)/1000, s.MemGB)}
		}
	}
	return nil
}

// sameGPUs reports whether two allocations span the same GPUs of the same servers.
func sameGPUs(a, b Allocation) bool {
	set := func(x Allocation) map[[2]int]bool {
		m := map[[2]int]bool{}
		for _, p := range x.Parts {
			for _, g := range p.GPUs {
				m[[2]int{p.Server, g}] = true
			}
		}
		return m
	}
	sa, sb := set(a), set(b)
	if len(sa) != len(sb) || a.GPUType != b.GPUType {
		return false
	}
	for k := range sa {
		if !sb[k] {
			return false
		}
	}
	return true
}
