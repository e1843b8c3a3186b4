package fungible

import (
	"fmt"
	"reflect"
	"testing"
)

func describe(plan Plan) []string {
	var out []string
	for _, c := range plan.Changes {
		a := c.Alloc
		s := fmt.Sprintf("%s %d %s %d×(%g CPUs, %g GB)", c.Op, a.Job, a.GPUType, a.GPUCount(), a.CPUsPerGPU, a.MemPerGPU)
		if a.Partner != NoPartner {
			s += fmt.Sprintf(" with %d", a.Partner)
		}
		out = append(out, s)
	}
	return out
}

// TestGandivaPacksWhenPairedSpeedsBeatTimeSlicing uses one V100 (3 CPUs, 62.5 GB): the second
// job has no GPU of its own and packs onto the first's when the pair's normalised speeds sum
// above 1.
func TestGandivaPacksWhenPairedSpeedsBeatTimeSlicing(t *testing.T) {
	s := loadSensitivity(t)
	queue := []Job{{ID: 1, Type: lm, GPUs: 1}, {ID: 2, Type: a3c, GPUs: 1}}
	for name, c := range map[string]struct {
		pair [2]float64
		want []string
	}{
		// 50/64.7 + 5/7.2 = 1.47: pack; both are flat, so halving CPUs and memory costs nothing.
		"gain": {[2]float64{50, 5}, []string{"start 1 v100 1×(3 CPUs, 62.5 GB)", "resize 1 v100 1×(1.5 CPUs, 31.25 GB)", "start 2 v100 1×(1.5 CPUs, 31.25 GB) with 1"}},
		// 20/64.7 + 2/7.2 = 0.59: time-slicing does better; job 2 waits.
		"loss":   {[2]float64{20, 2}, []string{"start 1 v100 1×(3 CPUs, 62.5 GB)"}},
		"cannot": {[2]float64{0, 0}, []string{"start 1 v100 1×(3 CPUs, 62.5 GB)"}},
	} {
		tab := newTable().setAlone("v100", lm, 1, 64.7).setAlone("v100", a3c, 1, 7.2).setPair("v100", lm, a3c, 1, c.pair[0], c.pair[1])
		m := SpeedModel{Tput: tab, Sens: s}
		plan, err := Gandiva(NewLedger(mixCluster(t, "1:0:0")), m, queue)
		if err != nil {
			t.Fatal(err)
		}
		if got := describe(plan); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %v, want %v", name, got, c.want)
			continue
		}
		checkCapacity(t, plan.Ledger)
		if name == "gain" {
			s1, _ := m.Held(plan.Ledger, 1)
			s2, _ := m.Held(plan.Ledger, 2)
			if s1 != 50 || s2 != 5 {
				t.Errorf("packed speeds %g, %g, want the pair's 50 and 5", s1, s2)
			}
		}
	}
}

// TestGandivaCountsTheCPUPriceOfPacking: the same pair throughputs that pack two flat jobs do not
// pack a ResNet-50, which at half of the fair share keeps 0.22 of its speed.
func TestGandivaCountsTheCPUPriceOfPacking(t *testing.T) {
	tab := newTable().setAlone("v100", res50, 1, 4.4).setAlone("v100", lm, 1, 64.7).setPair("v100", res50, lm, 1, 4, 50)
	plan, err := Gandiva(NewLedger(mixCluster(t, "1:0:0")), SpeedModel{Tput: tab, Sens: loadSensitivity(t)},
		[]Job{{ID: 1, Type: res50, GPUs: 1}, {ID: 2, Type: lm, GPUs: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if got := describe(plan); len(got) != 1 {
		t.Fatalf("%v: 4/4.4 + 50/64.7 = 1.68 on throughputs alone, but 0.2 + 0.77 < 1 at half the CPUs and memory", got)
	}
}

func TestFixedTakesTheFastestTypeWithRoom(t *testing.T) {
	tab := newTable().setAlone("v100", res50, 4, 17).setAlone("p100", res50, 4, 9).setAlone("k80", res50, 4, 3)
	plan, err := Fixed(NewLedger(mixCluster(t, "4:4:4")), SpeedModel{Tput: tab, Sens: loadSensitivity(t)}, queueOf(res50, 4, 1, 2, 3, 4))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"start 1 v100 4×(3 CPUs, 62.5 GB)", "start 2 p100 4×(3 CPUs, 62.5 GB)", "start 3 k80 4×(3 CPUs, 62.5 GB)"}
	if got := describe(plan); !reflect.DeepEqual(got, want) {
		t.Fatalf("%v, want %v", got, want)
	}
}
