package datasets

import (
	"bytes"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/sim"
)

// churnRun logs arrivals placed by the FGD rule with departures, evictions (re-placed later) and
// migrations mixed in, and records the observation the live environment encodes at every bind.
func churnRun(t *testing.T) ([]byte, []env.Observation) {
	t.Helper()
	run := makeRun(t, 50, 1.0, 11) // for the nodes, model and workload
	c, err := sim.NewCluster(run.nodes, run.model)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	lw, err := sim.NewLogWriter(&buf, sim.NewLogHeader(c, nil))
	if err != nil {
		t.Fatal(err)
	}
	live := env.NewPlacement(c, env.DefaultOptions())
	var obs []env.Observation
	var arrived int64
	var running []string
	var evicted []sim.Task
	place := func(task sim.Task, arrivedBefore int64) {
		ch, ok := fgdPlacer{}.Place(c, task, nil)
		if !ok {
			must(t, lw.Fail(task.Name, "no feasible node"))
			return
		}
		live.Present(task, arrivedBefore)
		var o env.Observation
		live.Observe(&o)
		obs = append(obs, o)
		if _, err := live.Step(env.Action{Candidate: ch.Node, GPUs: ch.GPUs}); err != nil {
			t.Fatal(err)
		}
		must(t, lw.Bind(task.Name, c.Node(ch.Node).Name, ch.GPUs))
		running = append(running, task.Name)
	}
	arrivedAt := map[string]int64{}
	for k, task := range run.tasks {
		must(t, lw.Arrive(task))
		arrivedAt[task.Name] = arrived
		arrived += task.TotalGPUMilli()
		place(task, arrivedAt[task.Name])
		switch {
		case k%5 == 4 && len(running) > 0: // a departure
			name := running[0]
			running = running[1:]
			if _, err := c.Remove(name); err != nil {
				t.Fatal(err)
			}
			must(t, lw.Delete(name))
		case k%7 == 6 && len(running) > 1: // an eviction, re-placed after the next arrival
			name := running[1]
			running = append(running[:1], running[2:]...)
			p, err := c.Remove(name)
			if err != nil {
				t.Fatal(err)
			}
			must(t, lw.Evict(name))
			evicted = append(evicted, p.Task)
		case k%11 == 10 && len(running) > 0: // a migration to another node
			name := running[len(running)-1]
			p, _ := c.Placement(name)
			for _, ch := range c.Candidates(p.Task, nil) {
				if ch.Node != p.Choice.Node {
					if err := c.Migrate(name, ch); err != nil {
						t.Fatal(err)
					}
					must(t, lw.Migrate(name, c.Node(p.Choice.Node).Name, p.Choice.GPUs, c.Node(ch.Node).Name, ch.GPUs))
					break
				}
			}
		case k%7 == 0 && len(evicted) > 0:
			task := evicted[0]
			evicted = evicted[1:]
			place(task, arrivedAt[task.Name])
		}
	}
	must(t, lw.Flush())
	return buf.Bytes(), obs
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestRoundTripWithChurn: observations rebuilt from the shards equal the live ones even when
// the log moves and removes running tasks between decisions.
func TestRoundTripWithChurn(t *testing.T) {
	log, want := churnRun(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "churn.jsonl"), log)
	out := filepath.Join(dir, "ds")
	o := testOptions(filepath.Join(dir, "*.jsonl"), out)
	o.ValFraction = 0
	m, _, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	if m.Rows != int64(len(want)) {
		t.Fatalf("%d rows, %d live decisions", m.Rows, len(want))
	}
	d, err := Open(out)
	if err != nil {
		t.Fatal(err)
	}
	changes, step := 0, 0
	err = d.ReadEpisode(m.Episodes[0], func(s *Sample) error {
		if !reflect.DeepEqual(s.Obs, want[step]) {
			t.Fatalf("step %d: rebuilt observation differs from the live one", step)
		}
		changes += len(s.Row.Changes)
		step++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if changes < 20 {
		t.Fatalf("only %d logged changes: the test does not exercise churn", changes)
	}
	// A batch reader starting mid-episode must replay the changes too.
	bo := DefaultBatchOptions(SplitTrain, 32)
	bo.ChunkRows = 37
	b, err := d.Batches(bo)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for n := 0; n < len(want); {
		bt, err := b.Next()
		if err != nil {
			t.Fatal(err)
		}
		for j := range bt.Size {
			w := want[bt.Step[j]]
			got := bt.Nodes[j*bt.MaxNodes*bt.NodeDim:][:len(w.Nodes)]
			if !reflect.DeepEqual(got, w.Nodes) {
				t.Fatalf("batch sample of step %d differs from the live observation", bt.Step[j])
			}
		}
		n += bt.Size
	}
}
