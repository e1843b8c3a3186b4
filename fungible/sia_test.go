package fungible

import (
	"math/rand/v2"
	"testing"

	"github.com/schedrl/schedrl/internal/repotest"
	"github.com/schedrl/schedrl/jobs"
)

// TestSiaGrowsAndShares on one 8-GPU V100 server with ResNet-18 at 30, 94, 115 and 340 steps/s on
// 1, 2, 4 and 8 GPUs: a lone job takes all 8 GPUs; two jobs share them, 4 each (√(115/30)+1
// twice beats √(340/30)+1 once plus nothing), and the plan fits the servers.
func TestSiaGrowsAndShares(t *testing.T) {
	tab := newTable().setAlone("v100", res18, 1, 30).setAlone("v100", res18, 2, 94).setAlone("v100", res18, 4, 115).setAlone("v100", res18, 8, 340)
	m := SpeedModel{Tput: tab, Sens: loadSensitivity(t)}
	l := NewLedger(mixCluster(t, "8:0:0"))
	for _, c := range []struct {
		ids  []int
		want map[int]int
	}{
		{[]int{1}, map[int]int{1: 8}},
		{[]int{1, 2}, map[int]int{1: 4, 2: 4}},
	} {
		st := RoundState{Now: 3600}
		for _, id := range c.ids {
			st.Present = append(st.Present, JobStatus{Job: Job{ID: id, Type: res18, GPUs: 1, Steps: 1000}})
		}
		plan, err := NewSia(DefaultSiaOptions()).Plan(l, m, st)
		if err != nil {
			t.Fatal(err)
		}
		checkCapacity(t, plan.Ledger)
		for id, g := range c.want {
			a, ok := plan.Ledger.Get(id)
			if !ok || a.GPUCount() != g {
				t.Fatalf("%d jobs: job %d holds %d GPUs (held %v), want %d", len(c.ids), id, a.GPUCount(), ok, g)
			}
		}
	}
	if len(l.Jobs()) != 0 {
		t.Fatal("the given ledger changed")
	}
}

// TestSiaRestartPenaltyKeepsAllocation: a job that held 4 GPUs last round keeps them when growing
// to 8 is worth less than the restart costs it (young job: factor (age−R)/(age+R)).
func TestSiaRestartPenaltyKeepsAllocation(t *testing.T) {
	tab := newTable().setAlone("v100", res18, 4, 100).setAlone("v100", res18, 8, 110)
	m := SpeedModel{Tput: tab, Sens: loadSensitivity(t)}
	l := NewLedger(mixCluster(t, "8:0:0"))
	prev := NewLedger(mixCluster(t, "8:0:0"))
	j := Job{ID: 1, Type: res18, GPUs: 4, Steps: 1000}
	pl := NewPlacer(prev, m)
	fc, fm := prev.Cluster().FairShare("v100")
	if ok, err := pl.Start(j, "v100", 4, fc, fm); !ok || err != nil {
		t.Fatal(ok, err)
	}
	a, _ := pl.Ledger().Get(1)
	st := RoundState{Now: 360, Present: []JobStatus{{Job: j, Held: true, Prev: a}}}
	plan, err := NewSia(DefaultSiaOptions()).Plan(l, m, st)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := plan.Ledger.Get(1); got.GPUCount() != 4 {
		t.Fatalf("held %d GPUs, want last round's 4", got.GPUCount())
	}
	st.Present[0].Held = false
	plan, err = NewSia(DefaultSiaOptions()).Plan(l, m, st)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := plan.Ledger.Get(1); got.GPUCount() != 8 {
		t.Fatalf("without a previous allocation: %d GPUs, want 8", got.GPUCount())
	}
}

// TestSiaGreedyGap measures the greedy solve against the exact optimum (every combination) on
// 300 small rounds of Gavel's measured table: 2-5 jobs of random Gavel models and requests on
// 8:8:8 or 4:4:4 GPUs. Measured: optimal in 168 of 300, 2.4% below the optimum on average,
// 13.9% at worst (docs/maifs.md, "The Sia-style optimiser"); the test holds it to 3% and 15%.
func TestSiaGreedyGap(t *testing.T) {
	tab, err := jobs.LoadThroughputs(repotest.Data("gavel", "simulation_throughputs.json"))
	if err != nil {
		t.Fatal(err)
	}
	s := loadSensitivity(t)
	m := SpeedModel{Tput: GavelTable(tab), Sens: s}
	types := s.JobTypes()
	rng := rand.New(rand.NewPCG(7, 7))
	sia := NewSia(DefaultSiaOptions())
	var sum, worst float64
	exactRounds := 0
	const rounds = 300
	for r := range rounds {
		c := mixCluster(t, []string{"8:8:8", "4:4:4"}[r%2])
		free := []int{0, 0, 0}
		for _, srv := range c {
			for k, g := range GPUTypes {
				if srv.GPUType == g {
					free[k] += srv.GPUs
				}
			}
		}
		n := 2 + rng.IntN(4)
		configs := make([][]siaConfig, 0, n)
		for i := range n {
			jt := types[rng.IntN(len(types))]
			js := JobStatus{Job: Job{ID: i, Type: jt, GPUs: 1, Arrival: 0}}
			cs, err := sia.configs(c, m, js, 3600)
			if err != nil {
				t.Fatal(err)
			}
			configs = append(configs, cs)
		}
		greedy := siaObjective(configs, SiaSolve(configs, free))
		best := siaExact(configs, free)
		if greedy > best+1e-9 {
			t.Fatalf("round %d: greedy %g above the exact optimum %g", r, greedy, best)
		}
		gap := (best - greedy) / best
		if gap < 1e-9 {
			exactRounds++
		}
		sum += gap
		worst = max(worst, gap)
	}
	t.Logf("greedy vs exact over %d rounds: mean gap %.3f%%, worst %.3f%%, optimal in %d", rounds, 100*sum/rounds, 100*worst, exactRounds)
	if sum/rounds > 0.03 || worst > 0.15 {
		t.Fatalf("mean gap %.3f, worst %.3f: want ≤ 0.03 and ≤ 0.15", sum/rounds, worst)
	}
}

// siaExact is the optimum over every combination of configurations (or none) that fits.
func siaExact(configs [][]siaConfig, free []int) float64 {
	if len(configs) == 0 {
		return 0
	}
	best := siaExact(configs[1:], free)
	for _, c := range configs[0] {
		if free[c.typ] < c.gpus {
			continue
		}
		free[c.typ] -= c.gpus
		best = max(best, c.value+siaExact(configs[1:], free))
		free[c.typ] += c.gpus
	}
	return best
}
