package fungible

import (
	"reflect"
	"testing"
)

// TestGreedyTakesTheBestSpeedPerResource on one 8-GPU V100 server with Gavel-like ResNet-18
// throughputs (superlinear from 1 to 2 GPUs). Per GPU at 62.5 GB, res18's profile over what it
// holds, 3·f/(2 + CPUs/3), peaks at 9 CPUs (2.4/(5/3) = 1.44); 2 GPUs run 94/30 = 3.1 times one,
// so 2 GPUs at 9 CPUs scores (3.13·2.4)/(2·5/3) = 2.26, above 1 GPU (1.44), 4 (1.38) or 8 (2.04).
// The second job finds 6 CPUs left: 2 GPUs at 3 CPUs (3.13/2 = 1.57) beats 1 GPU at 6 (1.31).
// The third finds no CPU and waits.
func TestGreedyTakesTheBestSpeedPerResource(t *testing.T) {
	tab := newTable().setAlone("v100", res18, 1, 30).setAlone("v100", res18, 2, 94).setAlone("v100", res18, 4, 115).setAlone("v100", res18, 8, 340)
	plan, err := Greedy(NewLedger(mixCluster(t, "8:0:0")), SpeedModel{Tput: tab, Sens: loadSensitivity(t)}, queueOf(res18, 1, 1, 2, 3))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"start 1 v100 2×(9 CPUs, 62.5 GB)", "start 2 v100 2×(3 CPUs, 62.5 GB)"}
	if got := describe(plan); !reflect.DeepEqual(got, want) {
		t.Fatalf("%v, want %v", got, want)
	}
	checkCapacity(t, plan.Ledger)
}

// TestGreedySharesWhenThePairGains: on one V100, a flat job takes the least it can (1 CPU,
// 20.83 GB); the next shares its GPU when the pair's normalised speeds gain over the first alone.
func TestGreedySharesWhenThePairGains(t *testing.T) {
	for name, c := range map[string]struct {
		pair [2]float64
		want []string
	}{
		// 50/64.7 + 6/7 - 1 = 0.63 > 0.
		"gain": {[2]float64{50, 6}, []string{"start 1 v100 1×(1 CPUs, 20.83 GB)", "start 2 v100 1×(1 CPUs, 20.83 GB) with 1"}},
		// 10/64.7 + 2/7 - 1 < 0.
		"loss": {[2]float64{10, 2}, []string{"start 1 v100 1×(1 CPUs, 20.83 GB)"}},
	} {
		tab := newTable().setAlone("v100", a3c, 1, 7).setAlone("v100", lm, 1, 64.7).setPair("v100", lm, a3c, 1, c.pair[0], c.pair[1])
		m := SpeedModel{Tput: tab, Sens: loadSensitivity(t)}
		plan, err := Greedy(NewLedger(mixCluster(t, "1:0:0")), m, []Job{{ID: 1, Type: a3c, GPUs: 1}, {ID: 2, Type: lm, GPUs: 1}})
		if err != nil {
			t.Fatal(err)
		}
		if got := describe(plan); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %v, want %v", name, got, c.want)
		}
		checkCapacity(t, plan.Ledger)
	}
}
