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
		t.Logf("%-34s %-22s avg JCT %10.0f vs %10.0f (%+6.2f%%)  makespan %9.0f vs %9.0f (%+6.2f%%)  util %.3f vs %.3f  r=%.4f",
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
