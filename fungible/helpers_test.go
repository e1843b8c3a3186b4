package fungible

import (
	"math"
	"strings"
	"testing"

	"github.com/schedrl/schedrl/internal/repotest"
)

// table is a hand-built Throughputs: alone[gpuType][jobType][gpus], pairs keyed by both types.
type table struct {
	alone map[string]map[string]map[int]float64
	pairs map[pairKey][2]float64
}

type pairKey struct {
	gpuType, a, b string
	gpus          int
}

func newTable() *table {
	return &table{alone: map[string]map[string]map[int]float64{}, pairs: map[pairKey][2]float64{}}
}

func (t *table) setAlone(gpuType, jobType string, gpus int, v float64) *table {
	if t.alone[gpuType] == nil {
		t.alone[gpuType] = map[string]map[int]float64{}
	}
	if t.alone[gpuType][jobType] == nil {
		t.alone[gpuType][jobType] = map[int]float64{}
	}
	t.alone[gpuType][jobType][gpus] = v
	return t
}

// setPair records a pair both ways, as Gavel's table does.
func (t *table) setPair(gpuType, a, b string, gpus int, va, vb float64) *table {
	t.pairs[pairKey{gpuType, a, b, gpus}] = [2]float64{va, vb}
	t.pairs[pairKey{gpuType, b, a, gpus}] = [2]float64{vb, va}
	return t
}

func (t *table) Alone(gpuType, jobType string, gpus int) (float64, bool) {
	v, ok := t.alone[gpuType][jobType][gpus]
	return v, ok
}

func (t *table) Paired(gpuType, jobType string, gpus int, otherType string, otherGPUs int) (float64, float64, bool) {
	if gpus != otherGPUs {
		return 0, 0, false
	}
	v, ok := t.pairs[pairKey{gpuType, jobType, otherType, gpus}]
	return v[0], v[1], ok
}

// syntheticTable covers every job type on v100, p100 and k80 at 1, 2, 4 and 8 GPUs (1 only for
// the 7 types Gavel does not distribute), with pair entries for every pair at the same count:
// [0, 0] for pairs of the same family, otherwise 70% and 60% of alone. Numbers are made up; the
// shape is Gavel's.
func syntheticTable(jobTypes []string) *table {
	t := newTable()
	speed := map[string]float64{"v100": 1, "p100": 0.6, "k80": 0.3}
	for i, a := range jobTypes {
		base := 5 + float64(i)
		for g, f := range speed {
			for _, n := range []int{1, 2, 4, 8} {
				if n > 1 && !distributed(a) {
					continue
				}
				t.setAlone(g, a, n, base*f*math.Pow(float64(n), 0.8))
			}
		}
	}
	for _, a := range jobTypes {
		for _, b := range jobTypes {
			for g := range speed {
				for n := range t.alone[g][a] {
					if _, ok := t.alone[g][b][n]; !ok {
						continue
					}
					if family(a) == family(b) {
						t.pairs[pairKey{g, a, b, n}] = [2]float64{0, 0}
						continue
					}
					va, _ := t.Alone(g, a, n)
					vb, _ := t.Alone(g, b, n)
					t.pairs[pairKey{g, a, b, n}] = [2]float64{0.7 * va, 0.6 * vb}
				}
			}
		}
	}
	return t
}

func distributed(jobType string) bool {
	f := family(jobType)
	return f != "A3C" && f != "CycleGAN" && f != "Recommendation"
}

func family(jobType string) string {
	for i, c := range jobType {
		if c == ' ' {
			return jobType[:i]
		}
	}
	return jobType
}

func loadProfiles(t testing.TB) *Profiles {
	t.Helper()
	p, err := LoadProfiles(repotest.Data("synergy", "profiles.json"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func loadSensitivity(t testing.TB) *Sensitivity {
	t.Helper()
	s, err := LoadSensitivity(repotest.Data("fungible", "gavel_synergy_models.csv"), loadProfiles(t))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mixCluster(t testing.TB, spec string) Cluster {
	t.Helper()
	c, err := NewMixCluster(spec, ServerGPUs)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// checkCapacity recomputes every server's use from the ledger's allocations, independently of the
// ledger's own counters, and fails on any over-commit.
func checkCapacity(t testing.TB, l *Ledger) {
	t.Helper()
	type use struct {
		cpu, mem float64
		gpu      map[int][]int
	}
	uses := map[int]*use{}
	for _, id := range l.Jobs() {
		a, _ := l.Get(id)
		for _, p := range a.Parts {
			u := uses[p.Server]
			if u == nil {
				u = &use{gpu: map[int][]int{}}
				uses[p.Server] = u
			}
			u.cpu += a.CPUsPerGPU * float64(len(p.GPUs))
			u.mem += a.MemPerGPU * float64(len(p.GPUs))
			for _, g := range p.GPUs {
				u.gpu[g] = append(u.gpu[g], id)
			}
		}
	}
	for s := range l.Cluster() {
		if free := len(l.FreeGPUs(s)); free != l.servers[s].free {
			t.Fatalf("server %s: %d GPUs free, the ledger counts %d", l.Cluster()[s].Name, free, l.servers[s].free)
		}
	}
	for s, u := range uses {
		srv := l.Cluster()[s]
		if u.cpu > srv.CPUs+1e-6 || u.mem > srv.MemGB+1e-6 {
			t.Fatalf("server %s over capacity: %g/%g CPUs, %g/%g GB", srv.Name, u.cpu, srv.CPUs, u.mem, srv.MemGB)
		}
		for g, holders := range u.gpu {
			if len(holders) > 2 {
				t.Fatalf("server %s GPU %d held by %v", srv.Name, g, holders)
			}
			if len(holders) == 2 {
				a, _ := l.Get(holders[0])
				b, _ := l.Get(holders[1])
				if a.Partner != b.Job || b.Partner != a.Job {
					t.Fatalf("server %s GPU %d shared by jobs %d and %d that are not partners", srv.Name, g, a.Job, b.Job)
				}
			}
		}
	}
}

func mustDo(t testing.TB, l *Ledger, a Allocation) {
	t.Helper()
	if err := l.Apply(a); err != nil {
		t.Fatal(err)
	}
}

func approx(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func contains(err error, s string) bool { return err != nil && strings.Contains(err.Error(), s) }
