package jobs

import (
	"math"
	"testing"
)

// Two 720-step jobs at 1 step/s arrive together on one V100. Under FIFO job 0 runs first,
// while both are in the system: alone on half the GPU it would take 1,440 s, it takes 720
// (rho 0.5). Job 1 waits 720 s and runs alone: its fair share is the whole GPU, 720 s alone,
// and it finishes at 1,440 (rho 2).
func TestFinishTimeFairnessOnAHandBuiltCase(t *testing.T) {
	table := handTable(map[string][NumGPUs]float64{"m": {1, 1, 1}})
	tr := handTrace(handJob{"m", 720, 0}, handJob{"m", 720, 0})
	res := mustRun(t, tr, table, Config{Cluster: cluster(t, "1:0:0"), Policy: "fifo"})
	if res.JCT[0] != 720 || res.JCT[1] != 1440 {
		t.Fatalf("JCTs %v, want 720 and 1440", res.JCT)
	}
	if res.Rho[0] != 0.5 || res.Rho[1] != 2 || res.RhoMean != 1.25 || res.RhoMax != 2 || res.RhoAboveOne != 0.5 {
		t.Errorf("rho %v mean %v max %v above one %v, want 0.5, 2; 1.25, 2, 0.5", res.Rho, res.RhoMean, res.RhoMax, res.RhoAboveOne)
	}
	// Gavel's rounds give other JCTs (its FIFO waits for a recompute), but the time alone is
	// the same: job 0's steps all ran with two jobs in the system, job 1's with one.
	res = mustRun(t, tr, table, Config{Cluster: cluster(t, "1:0:0"), Policy: "fifo", Compat: CompatGavel})
	for i, alone := range []float64{1440, 720} {
		if want := res.JCT[i] / alone; math.Abs(res.Rho[i]-want) > 1e-12 {
			t.Errorf("compat: job %d rho %v, want JCT %v / %v s alone", i, res.Rho[i], res.JCT[i], alone)
		}
	}
}

func TestIsolatedThroughputIsGavels(t *testing.T) {
	c := cluster(t, "4:4:4")
	// Alone in the system a job could hold 4 GPUs of each type: more than all its time, so
	// the shares are scaled to a third of its time on each.
	if got := isolatedThroughput([NumGPUs]float64{3, 2, 1}, 1, c, 1); math.Abs(got-2) > 1e-12 {
		t.Errorf("one job: %v steps/s, want 2", got)
	}
	// With 24 jobs, a 2-GPU job gets 4/24 of each type's GPUs, 1/12 of each type's time.
	if got := isolatedThroughput([NumGPUs]float64{3, 2, 1}, 2, c, 24); math.Abs(got-0.5) > 1e-12 {
		t.Errorf("24 jobs, scale 2: %v steps/s, want 0.5", got)
	}
}
