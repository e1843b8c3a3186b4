package extender

import (
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/schedrl/schedrl/kube/shadowlog"
	"github.com/schedrl/schedrl/policy"
	"github.com/schedrl/schedrl/sim"
)

// gatedPlacer is FGD that waits at each decision until the test lets it go, and says when it
// has started one.
type gatedPlacer struct {
	sim.Placer
	entered chan struct{}
	gate    chan struct{}
}

func (g gatedPlacer) Place(c *sim.Cluster, t sim.Task, rng *rand.Rand) (sim.Choice, bool) {
	g.entered <- struct{}{}
	<-g.gate
	return g.Placer.Place(c, t, rng)
}

// TestShadowQueueDropsAndRecords: with a queue of one and the candidate busy, a second
// question waits and a third is dropped and counted, never blocking the caller; the answered
// ones are recorded with both choices and their agreement, and the log is closed atomically.
func TestShadowQueueDropsAndRecords(t *testing.T) {
	c, err := sim.NewCluster([]sim.Node{{Name: "a", CPU: 64000, Mem: 262144, GPUs: 8, GPUType: "V100M16"},
		{Name: "b", CPU: 64000, Mem: 262144, GPUs: 4, GPUType: "V100M16"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	fgd, err := policy.NewPlacer("fgd")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	w, err := shadowlog.NewWriter(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	g := gatedPlacer{Placer: fgd, entered: make(chan struct{}), gate: make(chan struct{})}
	reg := prometheus.NewRegistry()
	s := newShadow(ShadowOptions{Placer: g, Model: "fgd", Queue: 1, Seed: 1, Log: w}, reg)
	task := func(n string) sim.Task { return sim.Task{Name: n, CPU: 1000, Mem: 1024, NumGPU: 1, GPUMilli: 1000} }
	ask := func(name string) {
		tk := task(name)
		ch, ok := fgd.Place(c, tk, sim.RNG(1, sim.StreamPolicy))
		if !ok {
			t.Fatal("fgd found no place")
		}
		s.offer(s.copyOf(c, time.Millisecond), c.ID(), tk, ch, "fgd", time.Millisecond)
	}
	ask("p1")
	<-g.entered // the worker holds p1
	ask("p2")   // queued
	ask("p3")   // queue full: dropped
	if got := testutil.ToFloat64(s.decisions.WithLabelValues("dropped")); got != 1 {
		t.Fatalf("dropped = %v, want 1", got)
	}
	go func() {
		for range g.entered {
		}
	}()
	close(g.gate)
	s.close()
	close(g.entered)
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(files) != 1 || filepath.Ext(files[0]) != ".jsonl" {
		t.Fatalf("shadow log folder holds %v, want one closed .jsonl", files)
	}
	recs, err := shadowlog.Read(files)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].Pod != "p1" || recs[1].Pod != "p2" {
		t.Fatalf("records %+v, want p1 and p2", recs)
	}
	for _, r := range recs {
		if !r.Agree || r.Shadow.Node != r.Serving.Node {
			t.Errorf("%s: FGD against itself disagrees: %+v", r.Pod, r)
		}
	}
	if got := testutil.ToFloat64(s.agreement); got != 1 {
		t.Errorf("agreement = %v, want 1", got)
	}
}
