package policy

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/schedrl/schedrl/sim"
	"github.com/schedrl/schedrl/sim/simtest"
)

// TestDefragmenters fragments the default trace's cluster with Random placement, runs each
// defragmenter with a budget, and checks the moves, the fragment and a replay of the log.
func TestDefragmenters(t *testing.T) {
	p := simtest.Openb(t, "default", 1.3, 3)
	for _, name := range Defragmenters() {
		t.Run(name, func(t *testing.T) {
			c, err := p.NewCluster()
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			lw, err := sim.NewLogWriter(&buf, sim.NewLogHeader(c, nil))
			if err != nil {
				t.Fatal(err)
			}
			rnd, _ := NewPlacer("random")
			if _, err := sim.RunArrivals(c, p.Workload[:6000], rnd, sim.RNG(3, sim.StreamPolicy), lw); err != nil {
				t.Fatal(err)
			}
			before, running := c.ClusterFrag(), c.Running()
			d, _ := NewDefragmenter(name)
			fgd, _ := NewPlacer("fgd")
			const budget = 40
			moves, err := d.Defrag(c, fgd, budget, sim.RNG(3, 9), lw)
			if err != nil {
				t.Fatal(err)
			}
			if len(moves) == 0 || len(moves) > budget {
				t.Fatalf("%d moves, want 1..%d", len(moves), budget)
			}
			lost := 0
			for _, m := range moves {
				if m.To.Node < 0 {
					lost++
					continue
				}
				if pl, ok := c.Placement(m.Task); !ok || pl.Choice != m.To {
					t.Fatalf("move %+v: task is at %+v", m, pl.Choice)
				}
			}
			if c.Running() != running-lost {
				t.Fatalf("running %d, want %d - %d lost", c.Running(), running, lost)
			}
			after := c.ClusterFrag()
			t.Logf("%s: %d moves (%d lost), fragment %.0f -> %.0f milli-GPU", name, len(moves), lost, before, after)
			if name == "greedy" && !(after < before) {
				t.Fatalf("greedy did not lower the fragment: %.1f -> %.1f", before, after)
			}
			if err := lw.Flush(); err != nil {
				t.Fatal(err)
			}
			lr, err := sim.NewLogReader(&buf)
			if err != nil {
				t.Fatal(err)
			}
			r, err := sim.NewReplayer(lr.Header)
			if err != nil {
				t.Fatal(err)
			}
			for {
				ev, err := lr.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err == nil {
					err = r.Apply(ev)
				}
				if err != nil {
					t.Fatalf("replay line %d: %v", lr.Line(), err)
				}
			}
			for _, pl := range c.Placements() {
				if q, ok := r.C.Placement(pl.Task.Name); !ok || q.Choice != pl.Choice {
					t.Fatalf("replay puts %s at %+v, cluster at %+v", pl.Task.Name, q.Choice, pl.Choice)
				}
			}
			if r.C.Running() != c.Running() {
				t.Fatalf("replay runs %d tasks, cluster %d", r.C.Running(), c.Running())
			}
		})
	}
}
