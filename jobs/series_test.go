package jobs

import (
	"reflect"
	"testing"
)

// Three one-GPU jobs on one V100 under FIFO: the first runs two rounds while the others wait,
// then the second, then the third; the series counts them at each boundary.
func TestSeriesCountsRunningAndWaitingPerRound(t *testing.T) {
	table := handTable(map[string][NumGPUs]float64{"m": {1, 0, 0}})
	tr := handTrace(handJob{"m", 150, 0}, handJob{"m", 100, 10}, handJob{"m", 50, 20})
	res := mustRun(t, tr, table, Config{Cluster: cluster(t, "1:0:0"), Policy: "fifo", Round: 100})
	want := []Sample{
		{Time: 0, Running: 1, Waiting: 0, GPUsBusy: 1},   // only job 0 has arrived
		{Time: 100, Running: 1, Waiting: 2, GPUsBusy: 1}, // job 0 finishes at 150
		{Time: 200, Running: 1, Waiting: 1, GPUsBusy: 1}, // job 1 runs 200-300
		{Time: 300, Running: 1, Waiting: 0, GPUsBusy: 1}, // job 2 runs 300-350
	}
	if got := res.Series(); !reflect.DeepEqual(got, want) {
		t.Errorf("series %+v, want %+v", got, want)
	}
	if res.Rounds != len(res.Series()) {
		t.Errorf("%d rounds, %d samples", res.Rounds, len(res.Series()))
	}
}
