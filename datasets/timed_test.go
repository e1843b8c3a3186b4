package datasets

import (
	"bytes"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/sim"
	"github.com/schedrl/schedrl/tasks"
)

// observingPlacer is the FGD rule in the timed world that records, at each start it decides,
// the observation a live placement environment over the same cluster encodes.
type observingPlacer struct {
	live      *env.Placement
	arrivedAt map[string]int64
	obs       []env.Observation
}

func (p *observingPlacer) Name() string { return "test-fgd" }

func (p *observingPlacer) Place(c *sim.Cluster, t sim.Task, rng *rand.Rand) (sim.Choice, bool) {
	ch, ok := fgdPlacer{}.Place(c, t, rng)
	if ok {
		p.live.Present(t, p.arrivedAt[t.Name])
		var o env.Observation
		p.live.Observe(&o)
		p.obs = append(p.obs, o)
	}
	return ch, ok
}

// TestTimedLogRoundTrip: a version-2 log of the openb timed world (arrive, start, complete;
// what `schedrl jobs --log` writes and DRR's placement agent clones) gives one row per start,
// and the observations rebuilt from the shards equal the live ones, though tasks leave between
// decisions.
func TestTimedLogRoundTrip(t *testing.T) {
	run := makeRun(t, 40, 1.0, 11) // for the nodes, model and trace
	trace, err := sim.LoadTasks(traceFile("openb_pod_list_default.csv"))
	must(t, err)
	c, err := sim.NewCluster(run.nodes, run.model)
	must(t, err)
	_, _, capGPU := c.Capacity()
	work, err := tasks.NewWorkload(trace, capGPU, tasks.WorkloadConfig{Load: 0.9, Seed: 5, Cap: 3600, Count: 400})
	must(t, err)
	pl := &observingPlacer{live: env.NewPlacement(c, env.DefaultOptions()), arrivedAt: map[string]int64{}}
	var arrived int64
	for _, a := range work.Arrivals {
		pl.arrivedAt[a.Task.Name] = arrived
		arrived += a.Task.TotalGPUMilli()
	}
	h := sim.NewLogHeader(c, map[string]string{"protocol": "openb-timed"})
	h.Version = sim.LogVersionTimed
	var buf bytes.Buffer
	lw, err := sim.NewLogWriter(&buf, h)
	must(t, err)
	q, err := tasks.NewQueue("backfill")
	must(t, err)
	if _, err := tasks.Run(c, pl, q, work.Arrivals, tasks.Config{Seed: 5}, lw); err != nil {
		t.Fatal(err)
	}
	must(t, lw.Flush())
	if !bytes.Contains(buf.Bytes(), []byte(`"complete"`)) {
		t.Fatal("no task completed in the log: the test does not exercise departures")
	}

	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "timed.jsonl"), buf.Bytes())
	out := filepath.Join(dir, "ds")
	o := testOptions(filepath.Join(dir, "*.jsonl"), out)
	o.ValFraction = 0
	m, _, err := Build(o)
	must(t, err)
	if m.Rows != int64(len(pl.obs)) || m.Rows != int64(len(work.Arrivals)) {
		t.Fatalf("%d rows, %d live decisions, %d arrivals", m.Rows, len(pl.obs), len(work.Arrivals))
	}
	d, err := Open(out)
	must(t, err)
	step, changes := 0, 0
	err = d.ReadEpisode(m.Episodes[0], func(s *Sample) error {
		if !reflect.DeepEqual(s.Obs, pl.obs[step]) {
			t.Fatalf("step %d: rebuilt observation differs from the live one", step)
		}
		changes += len(s.Row.Changes)
		step++
		return nil
	})
	must(t, err)
	if changes == 0 {
		t.Fatal("no completion reached the rows' changes")
	}
}
