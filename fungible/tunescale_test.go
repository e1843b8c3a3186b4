package fungible

import (
	"reflect"
	"testing"
)

// TestTuneScaleGrowsIntoIdleGPUs on one 8-GPU V100 server (24 CPUs) with Gavel-like ResNet-18
// throughputs: TUNE starts a lone job on one GPU at its best case, 9 CPUs; it grows to 2 GPUs
// (94 steps/s against 30), not to 4 (faster, but 4 x 9 CPUs do not fit). With two jobs TUNE
// holds 18 of the 24 CPUs and neither can grow: the plan is TUNE's.
func TestTuneScaleGrowsIntoIdleGPUs(t *testing.T) {
	tab := newTable().setAlone("v100", res18, 1, 30).setAlone("v100", res18, 2, 94).setAlone("v100", res18, 4, 115).setAlone("v100", res18, 8, 340)
	m := SpeedModel{Tput: tab, Sens: loadSensitivity(t)}
	l := NewLedger(mixCluster(t, "8:0:0"))
	for _, c := range []struct {
		queue []Job
		want  []string
	}{
		{queueOf(res18, 1, 1), []string{"start 1 v100 2×(9 CPUs, 62.5 GB)"}},
		{queueOf(res18, 1, 1, 2), []string{"start 1 v100 1×(9 CPUs, 62.5 GB)", "start 2 v100 1×(9 CPUs, 62.5 GB)"}},
	} {
		plan, err := TuneScale(l, m, c.queue)
		if err != nil {
			t.Fatal(err)
		}
		if got := describe(plan); !reflect.DeepEqual(got, c.want) {
			t.Fatalf("%d jobs: %v, want %v", len(c.queue), got, c.want)
		}
		checkCapacity(t, plan.Ledger)
	}
	if len(l.Jobs()) != 0 {
		t.Fatal("the given ledger changed")
	}
}
