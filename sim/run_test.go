package sim_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedrl/schedrl/policy"
	"github.com/schedrl/schedrl/sim"
	"github.com/schedrl/schedrl/sim/simtest"
)

// TestRunLogReplay runs FGD on the default trace with a decision log, checks the curve's
// shape, then replays the log and expects the exact final cluster.
func TestRunLogReplay(t *testing.T) {
	p := simtest.Openb(t, "default", 1.3, 42)
	var buf bytes.Buffer
	c, err := p.NewCluster()
	if err != nil {
		t.Fatal(err)
	}
	lw, err := sim.NewLogWriter(&buf, sim.NewLogHeader(c, p.LogMeta("fgd")))
	if err != nil {
		t.Fatal(err)
	}
	fgd, _ := policy.NewPlacer("fgd")
	res, err := sim.RunArrivals(c, p.Workload, fgd, sim.RNG(42, sim.StreamPolicy), lw)
	if err != nil {
		t.Fatal(err)
	}
	if err := lw.Flush(); err != nil {
		t.Fatal(err)
	}
	if res.Placed+res.Failed != len(p.Workload) || res.Placed != c.Running() {
		t.Fatalf("placed %d failed %d of %d, running %d", res.Placed, res.Failed, len(p.Workload), c.Running())
	}
	if first, last := res.Curve[0], res.Curve[len(res.Curve)-1]; first.ArrivedPct != 0 || last.ArrivedPct != 130 || len(res.Curve) != 131 {
		t.Fatalf("curve from %d to %d with %d rows, want 0..130", first.ArrivedPct, last.ArrivedPct, len(res.Curve))
	}
	var csv bytes.Buffer
	if err := sim.WriteCurve(&csv, res.Curve); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(csv.String(), "arrived_pct,alloc_gpu_pct,frag_gpu,frag_ratio_pct\n0,") {
		t.Fatalf("curve CSV starts %q", csv.String()[:60])
	}

	lr, err := sim.NewLogReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if lr.Header.Meta["policy"] != "fgd" || len(lr.Header.Nodes) != 1213 || len(lr.Header.Shapes) == 0 {
		t.Fatalf("header meta %v, %d nodes, %d shapes", lr.Header.Meta, len(lr.Header.Nodes), len(lr.Header.Shapes))
	}
	r, err := sim.NewReplayer(lr.Header)
	if err != nil {
		t.Fatal(err)
	}
	shuffled := false
	for i := range c.NumNodes() {
		if r.C.TieRank(i) != c.TieRank(i) {
			t.Fatalf("node %d: replayed tie rank %d, run %d", i, r.C.TieRank(i), c.TieRank(i))
		}
		shuffled = shuffled || c.TieRank(i) != i
	}
	if !shuffled {
		t.Fatal("the run's tie order is node order; the round trip checks nothing")
	}
	events := 0
	for {
		ev, err := lr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Apply(ev); err != nil {
			t.Fatalf("line %d: %v", lr.Line(), err)
		}
		events++
	}
	if events != len(p.Workload)*2 {
		t.Fatalf("%d events, want %d", events, 2*len(p.Workload))
	}
	if got, want := r.C.Metrics(), c.Metrics(); got != want {
		t.Fatalf("replayed metrics %+v, run %+v", got, want)
	}
	for _, pl := range c.Placements() {
		if q, ok := r.C.Placement(pl.Task.Name); !ok || q.Choice != pl.Choice {
			t.Fatalf("task %s: replay placed it at %+v, run at %+v", pl.Task.Name, q.Choice, pl.Choice)
		}
	}
}

func TestReplayRejectsBadEvents(t *testing.T) {
	nodes := []sim.Node{{Name: "n0", CPU: 8000, Mem: 8000, GPUs: 2, GPUType: "T4"}}
	c, _ := sim.NewCluster(nodes, nil)
	h := sim.NewLogHeader(c, nil)
	req := &sim.TaskRecord{CPU: 1000, Mem: 100, NumGPU: 1, GPUMilli: 500}
	arrive := sim.Event{Seq: 1, Type: sim.EvArrive, Task: "a", Request: req}
	bind := sim.Event{Seq: 2, Type: sim.EvBind, Task: "a", Node: "n0", GPUs: []int{1}}
	cases := []struct {
		name   string
		events []sim.Event
		want   string
	}{
		{"bind before arrive", []sim.Event{{Seq: 1, Type: sim.EvBind, Task: "a", Node: "n0", GPUs: []int{0}}}, "has not arrived"},
		{"unknown node", []sim.Event{arrive, {Seq: 2, Type: sim.EvBind, Task: "a", Node: "n9"}}, `unknown node "n9"`},
		{"no such gpu", []sim.Event{arrive, {Seq: 2, Type: sim.EvBind, Task: "a", Node: "n0", GPUs: []int{2}}}, "no GPU 2"},
		{"infeasible", []sim.Event{{Seq: 1, Type: sim.EvArrive, Task: "b", Request: &sim.TaskRecord{CPU: 9000}}, {Seq: 2, Type: sim.EvBind, Task: "b", Node: "n0"}}, "cpu 8000 milli free"},
		{"seq goes back", []sim.Event{arrive, {Seq: 1, Type: sim.EvFail, Task: "a"}}, "sequence must increase"},
		{"double arrive", []sim.Event{arrive, {Seq: 2, Type: sim.EvArrive, Task: "a", Request: req}}, "already arrived"},
		{"bad request", []sim.Event{{Seq: 1, Type: sim.EvArrive, Task: "a", Request: &sim.TaskRecord{NumGPU: 2, GPUMilli: 300}}}, "whole-GPU task"},
		{"migrate wrong from", []sim.Event{arrive, bind, {Seq: 3, Type: sim.EvMigrate, Task: "a", FromNode: "n0", FromGPUs: []int{0}, Node: "n0", GPUs: []int{0}}}, "but the task runs on n0 [1]"},
		{"evict unknown", []sim.Event{{Seq: 1, Type: sim.EvEvict, Task: "zz"}}, "not running"},
		{"unknown type", []sim.Event{{Seq: 1, Type: "teleport", Task: "a"}}, `unknown event type "teleport"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := sim.NewReplayer(h)
			if err != nil {
				t.Fatal(err)
			}
			var last error
			for _, ev := range tc.events {
				if last = r.Apply(ev); last != nil {
					break
				}
			}
			if last == nil || !strings.Contains(last.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", last, tc.want)
			}
		})
	}
	// A valid sequence: arrive, bind, migrate, evict, re-bind, delete.
	r, _ := sim.NewReplayer(h)
	for _, ev := range []sim.Event{arrive, bind,
		{Seq: 3, Type: sim.EvMigrate, Task: "a", FromNode: "n0", FromGPUs: []int{1}, Node: "n0", GPUs: []int{0}},
		{Seq: 4, Type: sim.EvEvict, Task: "a"}, {Seq: 5, Type: sim.EvBind, Task: "a", Node: "n0", GPUs: []int{1}},
		{Seq: 6, Type: sim.EvDelete, Task: "a"}} {
		if err := r.Apply(ev); err != nil {
			t.Fatal(err)
		}
	}
	if r.C.Running() != 0 {
		t.Fatal("task still running after delete")
	}
}

func TestLogReaderRejectsBadHeaders(t *testing.T) {
	good := sim.LogHeader{Schema: sim.LogSchema, Version: sim.LogVersion, Type: "header", Nodes: []sim.NodeRecord{{Name: "n"}}}
	enc := func(h any) string { b, _ := json.Marshal(h); return string(b) + "\n" }
	bad := good
	bad.Version = 99
	other := good
	other.Schema = "something-else"
	cases := map[string]struct{ body, want string }{
		"empty":          {"", "empty log"},
		"not json":       {"{oops\n", "line 1: header"},
		"version":        {enc(bad), "version 99"},
		"schema":         {enc(other), `schema "something-else"`},
		"unknown field":  {`{"schema":"schedrl.decision-log","version":1,"type":"header","nodes":[{"name":"n"}],"colour":1}` + "\n", "unknown field"},
		"tie order":      {`{"schema":"schedrl.decision-log","version":1,"type":"header","nodes":[{"name":"n"},{"name":"m"}],"tie_order":[1,1]}` + "\n", "line 1: tie_order: entry 1 (node 1)"},
		"bad event line": {enc(good) + `{"seq":1,"type":"arrive","task":"a","bogus":true}` + "\n", "line 2"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			lr, err := sim.NewLogReader(strings.NewReader(tc.body))
			if err == nil {
				_, err = lr.Next()
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

func TestRunTraceOrder(t *testing.T) {
	p := simtest.Openb(t, "default", 1.3, 1)
	events := sim.TraceOrder(p.Trace)
	c, err := p.NewCluster()
	if err != nil {
		t.Fatal(err)
	}
	fgd, _ := policy.NewPlacer("fgd")
	mid := events[len(events)/2].Time
	res, err := sim.RunTraceOrder(c, events, fgd, sim.RNG(1, sim.StreamPolicy), nil, func(ev sim.TraceEvent) bool { return ev.Time > mid })
	if err != nil {
		t.Fatal(err)
	}
	if c.Running() == 0 || c.Running() > res.Placed || res.Tasks == 0 {
		t.Fatalf("mid-trace state: %d running of %d placed", c.Running(), res.Placed)
	}
	c2, _ := p.NewCluster()
	full, err := sim.RunTraceOrder(c2, events, fgd, sim.RNG(1, sim.StreamPolicy), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cpu, mem, gpu := c2.Used(); c2.Running() != 0 || cpu != 0 || mem != 0 || gpu != 0 || full.Tasks != len(p.Trace) {
		t.Fatalf("after every deletion: %d running, used %d/%d/%d, %d tasks", c2.Running(), cpu, mem, gpu, full.Tasks)
	}
}

func TestRunBatchMatchesSequentialRuns(t *testing.T) {
	p := simtest.Openb(t, "gpushare40", 1.3, 5)
	var jobs []sim.Job
	for _, s := range []uint64{5, 6, 7} {
		e := p.Experiment
		e.Seed = s
		jobs = append(jobs, sim.Job{Experiment: e, LogPath: filepath.Join(t.TempDir(), "log.jsonl")})
	}
	out := sim.RunBatch(context.Background(), jobs, func() (sim.Placer, error) { return policy.NewPlacer("bestfit") }, 2)
	for i, r := range out {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		q, err := sim.Prepare(jobs[i].Experiment)
		if err != nil {
			t.Fatal(err)
		}
		bf, _ := policy.NewPlacer("bestfit")
		_, want, err := q.Run(bf, nil)
		if err != nil {
			t.Fatal(err)
		}
		if r.Seed != jobs[i].Seed || r.Result.Final != want.Final || r.Result.Failed != want.Failed {
			t.Fatalf("job %d (seed %d): batch %+v, sequential %+v", i, r.Seed, r.Result.Final, want.Final)
		}
		if _, err := os.Stat(r.LogPath); err != nil {
			t.Fatalf("job %d: log not written: %v", i, err)
		}
	}
	bad := sim.RunBatch(context.Background(), []sim.Job{{Experiment: sim.Experiment{NodesPath: "/nonexistent"}}}, func() (sim.Placer, error) { return policy.NewPlacer("fgd") }, 1)
	if bad[0].Err == nil {
		t.Fatal("a job with a missing node list must report an error")
	}
}
