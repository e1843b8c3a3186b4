package fungible

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

func oneGPU(job, server int, gpus []int, cpus, mem float64) Allocation {
	return Allocation{Job: job, JobType: "A3C", GPUType: "v100", Parts: []Part{{server, gpus}}, CPUsPerGPU: cpus, MemPerGPU: mem, Partner: NoPartner}
}

func TestLedgerRefusesOverCommitNamingServerAndResource(t *testing.T) {
	c := mixCluster(t, "8:8:0")
	l := NewLedger(c)
	mustDo(t, l, oneGPU(1, 0, []int{0, 1}, 9, 100)) // 18 of 24 CPUs, 200 of 500 GB
	for name, c := range map[string]struct {
		a        Allocation
		resource string
		detail   string
	}{
		"cpu":    {oneGPU(2, 0, []int{2, 3}, 4, 10), "cpu", "asks for 8 CPUs, 6 of 24 are free"},
		"memory": {oneGPU(2, 0, []int{2, 3}, 1, 200), "memory", "asks for 400 GB, 300 of 500 GB are free"},
		"gpu":    {oneGPU(2, 0, []int{1}, 1, 10), "gpu", "asks for GPU 1, held by job 1"},
		"index":  {oneGPU(2, 0, []int{8}, 1, 10), "gpu", "asks for GPU 8, the server has 8"},
		"twice":  {oneGPU(2, 0, []int{3, 3}, 1, 10), "gpu", "names GPU 3 twice"},
		"type":   {oneGPU(2, 1, []int{0}, 1, 10), "gpu", "asks for v100 GPUs, the server has p100"},
	} {
		err := l.Apply(c.a)
		var ce *CapacityError
		if !errors.As(err, &ce) || ce.Resource != c.resource || !strings.Contains(err.Error(), c.detail) {
			t.Errorf("%s: error %v, want a %s capacity error saying %q", name, err, c.resource, c.detail)
			continue
		}
		if !strings.HasPrefix(err.Error(), "server "+l.Cluster()[c.a.Parts[0].Server].Name+": "+c.resource) {
			t.Errorf("%s: %q does not start with the server and resource", name, err)
		}
	}
	if err := l.Resize(1, 12.5, 100); err == nil || !strings.Contains(err.Error(), "server v100-00: cpu: job 1 grows by 7 CPUs, 6 of 24 are free") {
		t.Errorf("resize beyond capacity: %v", err)
	}
	if a, _ := l.Get(1); a.CPUsPerGPU != 9 {
		t.Errorf("a refused resize changed the allocation: %+v", a)
	}
	for _, bad := range []error{l.Apply(oneGPU(1, 0, []int{4}, 1, 1)), l.Release(7), l.Resize(7, 1, 1), l.Apply(Allocation{Job: 9, GPUType: "v100", Partner: NoPartner}), l.Apply(oneGPU(3, 5, []int{0}, 1, 1))} {
		if bad == nil {
			t.Error("a bad ledger operation succeeded")
		}
	}
	checkCapacity(t, l)
}

func TestLedgerPartnersShareExactlyTheSameGPUs(t *testing.T) {
	l := NewLedger(mixCluster(t, "8:0:0"))
	mustDo(t, l, oneGPU(1, 0, []int{0, 1}, 1.5, 31.25))
	shared := oneGPU(2, 0, []int{0, 1}, 1.5, 31.25)
	shared.Partner = 1
	for name, c := range map[string]struct {
		a    Allocation
		want string
	}{
		"other GPUs":   {func() Allocation { a := shared; a.Parts = []Part{{0, []int{0, 2}}}; return a }(), "spans other GPUs"},
		"no partner":   {func() Allocation { a := shared; a.Partner = 5; return a }(), "partner job 5 holds no allocation"},
		"not declared": {oneGPU(2, 0, []int{0, 1}, 1, 1), "held by job 1"},
	} {
		if err := l.Apply(c.a); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
	mustDo(t, l, shared)
	if a, _ := l.Get(1); a.Partner != 2 {
		t.Fatalf("job 1's partner %d, want 2", a.Partner)
	}
	third := shared
	third.Job = 3
	if err := l.Apply(third); err == nil || !strings.Contains(err.Error(), "already shares with job 2") {
		t.Errorf("a third job on shared GPUs: %v", err)
	}
	checkCapacity(t, l)
	if err := l.Release(1); err != nil {
		t.Fatal(err)
	}
	if a, _ := l.Get(2); a.Partner != NoPartner {
		t.Errorf("job 2 still names partner %d after job 1 left", a.Partner)
	}
	if free := l.FreeGPUs(0); len(free) != 6 || free[0] != 2 {
		t.Errorf("free GPUs %v: job 2 must keep GPUs 0 and 1", free)
	}
}

// TestLedgerNeverOverCommits applies, resizes and releases random allocations: whatever the
// ledger accepts, the allocations it holds never exceed a server, and releasing everything
// returns every server to empty.
func TestLedgerNeverOverCommits(t *testing.T) {
	c := mixCluster(t, "20:12:6")
	l := NewLedger(c)
	rng := rand.New(rand.NewPCG(7, 7))
	accepted, refused := 0, 0
	for step := range 5000 {
		switch jobs := l.Jobs(); {
		case len(jobs) > 0 && rng.IntN(4) == 0:
			if err := l.Release(jobs[rng.IntN(len(jobs))]); err != nil {
				t.Fatal(err)
			}
		case len(jobs) > 0 && rng.IntN(4) == 0:
			l.Resize(jobs[rng.IntN(len(jobs))], rng.Float64()*10, rng.Float64()*200)
		default:
			s := rng.IntN(len(c))
			a := Allocation{Job: step, JobType: "A3C", GPUType: c[s].GPUType, Partner: NoPartner,
				CPUsPerGPU: float64(rng.IntN(13)) / 2, MemPerGPU: rng.Float64() * 150}
			for range 1 + rng.IntN(2) {
				srv := rng.IntN(len(c))
				a.Parts = append(a.Parts, Part{srv, []int{rng.IntN(c[srv].GPUs)}})
			}
			if rng.IntN(5) == 0 && len(jobs) > 0 {
				p, _ := l.Get(jobs[rng.IntN(len(jobs))])
				a.Parts, a.GPUType, a.Partner = p.Parts, p.GPUType, p.Job
			}
			if l.Apply(a) == nil {
				accepted++
			} else {
				refused++
			}
		}
		checkCapacity(t, l)
	}
	if accepted < 500 || refused < 500 {
		t.Fatalf("%d accepted, %d refused: the sequence does not exercise both", accepted, refused)
	}
	for _, j := range l.Jobs() {
		if err := l.Release(j); err != nil {
			t.Fatal(err)
		}
	}
	for i, s := range c {
		if cpus, mem := l.Room(i); cpus != s.CPUs || mem != s.MemGB || len(l.FreeGPUs(i)) != s.GPUs {
			t.Fatalf("server %s after releasing all: %g CPUs, %g GB, %d GPUs free", s.Name, cpus, mem, len(l.FreeGPUs(i)))
		}
	}
}

func TestCloneIsIndependent(t *testing.T) {
	l := NewLedger(mixCluster(t, "8:0:0"))
	mustDo(t, l, oneGPU(1, 0, []int{0}, 3, 62.5))
	c := l.Clone()
	mustDo(t, c, oneGPU(2, 0, []int{1}, 3, 62.5))
	if err := c.Release(1); err != nil {
		t.Fatal(err)
	}
	if got := l.Jobs(); len(got) != 1 || got[0] != 1 || len(l.FreeGPUs(0)) != 7 {
		t.Fatalf("the original changed with its clone: jobs %v, free %v", got, l.FreeGPUs(0))
	}
}
