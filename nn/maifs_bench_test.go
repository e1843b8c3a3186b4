package nn

import (
	"slices"
	"testing"
	"time"

	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/fungible"
	"github.com/schedrl/schedrl/fungible/fungibletest"
	"github.com/schedrl/schedrl/internal/config"
)

// BenchmarkMAIFSDecision100Jobs54Servers is the decision-latency target: one scheduling point
// (observe, score with the network, decode along the coordination graph) with 100 jobs on
// 54 8-GPU servers (144:144:144), on CPU; it reports the p99 over the iterations in ms.
func BenchmarkMAIFSDecision100Jobs54Servers(b *testing.B) {
	e, o := maifsObs(b, "144:144:144", 100)
	if len(e.Cluster()) != 54 || o.NumAgents() != 100 {
		b.Fatalf("%d servers, %d agents", len(e.Cluster()), o.NumAgents())
	}
	benchDecision(b, e, fungible.RoundState{Now: 0, Present: o.Jobs})
}

// BenchmarkMAIFSDecision1000Jobs54Servers is the same with 1,000 present jobs, the agents the
// 100 with the least remaining time (maifs.window_order srtf): the window's choice and the
// server rows see every present job.
func BenchmarkMAIFSDecision1000Jobs54Servers(b *testing.B) {
	m := fungibletest.Model(b)
	c := fungibletest.Cluster(b, "144:144:144")
	e, err := env.NewMAIFS(c, m, env.MAIFSOptions{WindowOrder: "srtf"})
	if err != nil {
		b.Fatal(err)
	}
	work := fungibletest.Work(b, m, 1000, 60, 7)
	prev, err := fungible.Tune(fungible.NewLedger(c), m, work)
	if err != nil {
		b.Fatal(err)
	}
	s := fungible.RoundState{Now: work[len(work)-1].Arrival}
	for i, j := range work {
		st := fungible.JobStatus{Job: j, Done: float64(j.Steps) * float64(i%5) / 10, Waited: s.Now - j.Arrival}
		if i%3 == 0 {
			st.Prev, st.Held = prev.Ledger.Get(j.ID)
		}
		s.Present = append(s.Present, st)
	}
	benchDecision(b, e, s)
}

// benchDecision times one decision point of s per iteration and reports the p99 in ms.
func benchDecision(b *testing.B, e *env.MAIFS, s fungible.RoundState) {
	// One intra-op thread, as the evaluations run it (--set device.threads=1): a decision is too
	// small to split, and spare threads only spin against the other work on the cores.
	dev, err := Device(config.DeviceConfig{Name: "cpu", Threads: 1})
	if err != nil {
		b.Fatal(err)
	}
	Seed(3)
	net, err := NewMAIFSNet(NewMAIFSArch(64, 4, 64, true, env.MAIFSOptions{}), dev) // maifs-bc's default size
	if err != nil {
		b.Fatal(err)
	}
	sc := MAIFSScorer{Net: net, Dev: dev}
	l := fungible.NewLedger(e.Cluster())
	var took []time.Duration
	for b.Loop() {
		start := time.Now()
		obs, err := e.Observe(l, s)
		if err != nil {
			b.Fatal(err)
		}
		scores, err := sc.ScoreMAIFS(obs)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := e.Decode(l, obs, scores, true); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[min(len(took)-1, len(took)*99/100)].Microseconds())/1000, "p99-ms")
}
