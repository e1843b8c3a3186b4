package jobs

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"gonum.org/v1/gonum/stat"

	"github.com/schedrl/schedrl/internal/repotest"
)

// reference is one of Gavel's simulator runs in data/gavel/reference.
type reference struct {
	Trace       string             `json:"trace"`
	Cluster     string             `json:"cluster_v100_p100_k80"`
	Policy      string             `json:"policy"`
	Seed        uint64             `json:"seed"`
	Window      [2]int             `json:"window"`
	RoundS      float64            `json:"round_s"`
	AvgJCT      float64            `json:"avg_jct_s"`
	Makespan    float64            `json:"makespan_s"`
	Utilization float64            `json:"utilization"`
	JCT         map[string]float64 `json:"jct_s"`
}

func loadReferences(t testing.TB) []reference {
	paths, err := filepath.Glob(repotest.Data("gavel", "reference", "*.json"))
	if err != nil || len(paths) != 12 {
		t.Fatalf("want 12 reference runs, found %d (%v)", len(paths), err)
	}
	sort.Strings(paths)
	var out []reference
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var r reference
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		out = append(out, r)
	}
	return out
}

func runReference(t testing.TB, table *Throughputs, r reference) Result {
	tr, err := ReadTrace(repotest.Data("gavel", "reference", r.Trace))
	if err != nil {
		t.Fatal(err)
	}
	c, err := ParseCluster(r.Cluster, "")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(tr, table, Config{Cluster: c, Policy: r.Policy, Round: r.RoundS, Window: r.Window, Seed: r.Seed, Compat: CompatGavel})
	if err != nil {
		t.Fatalf("%s %s: %v", r.Trace, r.Policy, err)
	}
	return res
}

func loadTable(t testing.TB) *Throughputs {
	table, err := LoadThroughputs(repotest.Data("gavel", "simulation_throughputs.json"))
	if err != nil {
		t.Fatal(err)
	}
	return table
}

// jctCorrelation is Pearson's r between our per-job JCTs and Gavel's.
func jctCorrelation(res Result, r reference) float64 {
	var ours, theirs []float64
	for k, v := range r.JCT {
		var idx int
		if err := json.Unmarshal([]byte(k), &idx); err != nil {
			continue
		}
		if o, ok := res.JCT[idx]; ok {
			ours, theirs = append(ours, o), append(theirs, v)
		}
	}
	return stat.Correlation(ours, theirs, nil)
}

// TestGavelCompatMatchesReferenceRuns is the fidelity acceptance: avg JCT and makespan within
// 2% of Gavel's simulator for fifo, 5% for the two LP policies, on all four configurations.
func TestGavelCompatMatchesReferenceRuns(t *testing.T) {
	table := loadTable(t)
	for _, r := range loadReferences(t) {
		res := runReference(t, table, r)
		bound := 0.05
		if r.Policy == "fifo" {
			bound = 0.02
		}
		dj := res.AvgJCT/r.AvgJCT - 1
		dm := res.Makespan/r.Makespan - 1
		// One markdown row per run: docs/jobs.md's fidelity table.
		t.Logf("| %s | %s | %.0f | %.0f | %+.2f%% | %.0f | %.0f | %+.2f%% | %.3f / %.3f | %.4f |",
			strings.TrimSuffix(r.Trace, ".trace"), r.Policy, res.AvgJCT, r.AvgJCT, 100*dj, res.Makespan, r.Makespan, 100*dm,
			res.Utilization, r.Utilization, jctCorrelation(res, r))
		if math.Abs(dj) > bound || math.Abs(dm) > bound {
			t.Errorf("%s %s: avg JCT %+.2f%%, makespan %+.2f%%, want within %.0f%%", r.Trace, r.Policy, 100*dj, 100*dm, 100*bound)
		}
		if len(res.Dropped)+len(res.JCT) != res.Jobs {
			t.Errorf("%s %s: %d JCTs and %d dropped for %d jobs", r.Trace, r.Policy, len(res.JCT), len(res.Dropped), res.Jobs)
		}
	}
}

// BenchmarkGavelCompat300Jobs is the speed target: a 300-job reference configuration (Gavel's
// simulator takes 14-58 s on these).
func BenchmarkGavelCompat300Jobs(b *testing.B) {
	table := loadTable(b)
	for _, r := range loadReferences(b) {
		b.Run(strings.TrimSuffix(r.Trace, ".trace")+"/"+r.Policy, func(b *testing.B) {
			for b.Loop() {
				runReference(b, table, r)
			}
		})
	}
}

// Gavel's simulator (c4fa400, Python 3.11, cvxpy 1.9.3, ECOS 2.0.14) on configurations no
// reference run covers, run once for this test (docs/jobs.md): its avg JCT and makespan.
var unnamedGavelRuns = []struct {
	trace          string // under data/gavel
	first          int    // keep only the first jobs (0: all)
	cluster        string
	seed           uint64
	window         [2]int
	policy         string
	avgJCT, makesp float64
}{
	{"traces/msr/seed=1/ed69ec.trace", 300, "24:24:24", 3, [2]int{0, 300}, "fifo", 327028.21, 5164932.993},
	{"reference/gen-16x3-lam2400-seed1-multigpu.trace", 0, "12:12:12", 2, [2]int{50, 250}, "fifo", 450205.418, 4021523.628},
	{"reference/gen-36x3-lam1200-seed0.trace", 0, "24:16:8", 4, [2]int{0, 300}, "fifo", 77532.966, 1955460.886},
	{"traces/msr/seed=1/ed69ec.trace", 300, "24:24:24", 3, [2]int{0, 300}, "max_min_fairness", 408937.323, 6773787.912},
	{"reference/gen-16x3-lam2400-seed1-multigpu.trace", 0, "12:12:12", 2, [2]int{50, 250}, "max_min_fairness", 431136.71, 5926976.859},
	{"reference/gen-36x3-lam1200-seed0.trace", 0, "24:16:8", 4, [2]int{0, 300}, "max_min_fairness", 70210.878, 1033187.962},
	{"traces/msr/seed=1/ed69ec.trace", 300, "24:24:24", 3, [2]int{0, 300}, "max_min_fairness_perf", 280867.286, 5009952.005},
	{"reference/gen-16x3-lam2400-seed1-multigpu.trace", 0, "12:12:12", 2, [2]int{50, 250}, "max_min_fairness_perf", 242154.923, 5019076.4},
	{"reference/gen-36x3-lam1200-seed0.trace", 0, "24:16:8", 4, [2]int{0, 300}, "max_min_fairness_perf", 54354.666, 849231.025},
}

func TestGavelCompatMatchesUnnamedConfigurations(t *testing.T) {
	table := loadTable(t)
	for _, u := range unnamedGavelRuns {
		tr, err := ReadTrace(repotest.Data("gavel", u.trace))
		if err != nil {
			t.Fatal(err)
		}
		if u.first > 0 {
			tr.Jobs = tr.Jobs[:u.first]
		}
		res, err := Run(tr, table, Config{Cluster: cluster(t, u.cluster), Policy: u.policy, Window: u.window, Seed: u.seed, Compat: CompatGavel})
		if err != nil {
			t.Fatal(err)
		}
		bound := 0.05
		if u.policy == "fifo" {
			bound = 0.02
		}
		dj, dm := res.AvgJCT/u.avgJCT-1, res.Makespan/u.makesp-1
		t.Logf("%s %s %s seed %d: avg JCT %+.2f%%, makespan %+.2f%%", u.trace, u.cluster, u.policy, u.seed, 100*dj, 100*dm)
		if math.Abs(dj) > bound || math.Abs(dm) > bound {
			t.Errorf("%s on %s, %s: avg JCT %.0f vs Gavel's %.0f (%+.2f%%), makespan %.0f vs %.0f (%+.2f%%), want within %.0f%%",
				u.trace, u.cluster, u.policy, res.AvgJCT, u.avgJCT, 100*dj, res.Makespan, u.makesp, 100*dm, 100*bound)
		}
	}
}
