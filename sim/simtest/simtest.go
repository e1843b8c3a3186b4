// Package simtest builds the simulator's experiments and clusters from the vendored openb
// data (found through repotest) for tests and benchmarks of every package: the one cluster
// builder their tests share.
package simtest

import (
	"testing"

	"github.com/schedrl/schedrl/internal/repotest"
	"github.com/schedrl/schedrl/sim"
)

// Openb is the experiment of the openb pod list trace (a short name: "default",
// "gpushare40", ...) on all 1213 nodes at tune ratio and seed, with the paper's 95% shape
// coverage.
func Openb(tb testing.TB, trace string, tune float64, seed uint64) *sim.Prepared {
	tb.Helper()
	p, err := sim.Prepare(sim.Experiment{NodesPath: repotest.OpenbNodes(), PodsPath: repotest.OpenbPods(trace),
		Tune: tune, Seed: seed, Coverage: 0.95})
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// OpenbCluster is Openb's empty cluster, in the seed's tie order, and its workload.
func OpenbCluster(tb testing.TB, trace string, tune float64, seed uint64) (*sim.Cluster, []sim.Task) {
	tb.Helper()
	p := Openb(tb, trace, tune, seed)
	c, err := p.NewCluster()
	if err != nil {
		tb.Fatal(err)
	}
	return c, p.Workload
}

// OpenbTrace is the openb node list, the pod list trace (a short name) in trace order and its
// typical shapes at the paper's 95% coverage: the parts timed worlds build their own runs from.
func OpenbTrace(tb testing.TB, trace string) ([]sim.Node, []sim.Task, *sim.FragModel) {
	tb.Helper()
	nodes, err := sim.LoadNodes(repotest.OpenbNodes())
	if err != nil {
		tb.Fatal(err)
	}
	tasks, err := sim.LoadTasks(repotest.OpenbPods(trace))
	if err != nil {
		tb.Fatal(err)
	}
	model, err := sim.TypicalShapes(tasks, 0.95)
	if err != nil {
		tb.Fatal(err)
	}
	return nodes, tasks, model
}
