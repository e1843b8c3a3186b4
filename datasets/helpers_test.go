package datasets

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/internal/repotest"
	"github.com/schedrl/schedrl/sim"
)

func traceFile(name string) string {
	return filepath.Join(repotest.OpenbDir(), name)
}

// fgdPlacer places on the candidate that raises its node's fragment least (lowest index on
// ties): the FGD rule, enough to make realistic expert logs without the policy package.
type fgdPlacer struct{}

func (fgdPlacer) Name() string { return "test-fgd" }

func (fgdPlacer) Place(c *sim.Cluster, t sim.Task, _ *rand.Rand) (sim.Choice, bool) {
	best, bestD, ok := sim.Choice{}, 0.0, false
	for _, ch := range c.Candidates(t, nil) {
		if d := c.FragDelta(t, ch); !ok || d < bestD {
			best, bestD, ok = ch, d, true
		}
	}
	return best, ok
}

// expertRun is a logged arrival run on the openb cluster: the log bytes plus what made it.
type expertRun struct {
	nodes []sim.Node
	model *sim.FragModel
	tasks []sim.Task
	log   []byte
}

// makeRun runs the FGD rule over a tune-ratio workload of the default trace on the first
// nNodes openb nodes (all of them when nNodes is 0) and returns the decision log.
func makeRun(tb testing.TB, nNodes int, ratio float64, seed uint64) expertRun {
	tb.Helper()
	nodes, err := sim.LoadNodes(traceFile("openb_node_list_gpu_node.csv"))
	if err != nil {
		tb.Fatal(err)
	}
	if nNodes > 0 {
		nodes = nodes[:nNodes]
	}
	trace, err := sim.LoadTasks(traceFile("openb_pod_list_default.csv"))
	if err != nil {
		tb.Fatal(err)
	}
	model, err := sim.TypicalShapes(trace, 0.95)
	if err != nil {
		tb.Fatal(err)
	}
	c, err := sim.NewCluster(nodes, model)
	if err != nil {
		tb.Fatal(err)
	}
	_, _, capGPU := c.Capacity()
	tasks, err := sim.TuneWorkload(trace, capGPU, ratio, sim.RNG(seed, sim.StreamWorkload))
	if err != nil {
		tb.Fatal(err)
	}
	var buf bytes.Buffer
	lw, err := sim.NewLogWriter(&buf, sim.NewLogHeader(c, map[string]string{"policy": "test-fgd"}))
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := sim.RunArrivals(c, tasks, fgdPlacer{}, sim.RNG(seed, sim.StreamPolicy), lw); err != nil {
		tb.Fatal(err)
	}
	if err := lw.Flush(); err != nil {
		tb.Fatal(err)
	}
	return expertRun{nodes: nodes, model: model, tasks: tasks, log: buf.Bytes()}
}

func writeFile(tb testing.TB, path string, data []byte) {
	tb.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		tb.Fatal(err)
	}
}

func testOptions(logs, out string) BuildOptions {
	return BuildOptions{
		Logs: logs, Env: env.PlacementName, Out: out, ValFraction: 0.34, Seed: 1,
		ShardRows: 1500, RowGroupRows: 500, Workers: 2, EnvOptions: env.DefaultOptions(), Gamma: 0.99,
	}
}
