package sim_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/schedrl/schedrl/sim"
)

// timedLog writes a version-2 log of events on a one-node cluster (2 GPUs).
func timedLog(t *testing.T, write func(lw *sim.LogWriter) error) string {
	t.Helper()
	c, err := sim.NewCluster([]sim.Node{{Name: "n0", CPU: 8000, Mem: 8000, GPUs: 2, GPUType: "T4"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := sim.NewLogHeader(c, nil)
	h.Version = sim.LogVersionTimed
	var buf bytes.Buffer
	lw, err := sim.NewLogWriter(&buf, h)
	if err != nil {
		t.Fatal(err)
	}
	if err := write(lw); err != nil {
		t.Fatal(err)
	}
	if err := lw.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// replay reads and applies a whole log, returning the first error.
func replay(body string) (*sim.Replayer, error) {
	lr, err := sim.NewLogReader(strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	r, err := sim.NewReplayer(lr.Header)
	if err != nil {
		return nil, err
	}
	for {
		ev, err := lr.Next()
		if errors.Is(err, io.EOF) {
			return r, nil
		}
		if err != nil {
			return r, err
		}
		if err := r.Apply(ev); err != nil {
			return r, err
		}
	}
}

func TestTimedLogRoundTrip(t *testing.T) {
	whole := sim.Task{Name: "a", CPU: 1000, Mem: 100, NumGPU: 2, GPUMilli: 1000}
	share := sim.Task{Name: "b", CPU: 1000, Mem: 100, NumGPU: 1, GPUMilli: 500}
	body := timedLog(t, func(lw *sim.LogWriter) error {
		steps := []func() error{
			func() error { return lw.Arrive(whole) },
			func() error { return lw.Start("a", "n0", sim.NewGPUSet(0, 1)) },
			func() error { return lw.SetTime(2.5) },
			func() error { return lw.Arrive(share) },
			func() error { return lw.SetTime(10) },
			func() error { return lw.Preempt("a", "round") },
			func() error { return lw.Start("b", "n0", sim.NewGPUSet(1)) },
			func() error { return lw.SetTime(12) },
			func() error { return lw.Complete("b") },
			func() error { return lw.Start("a", "n0", sim.NewGPUSet(0, 1)) },
			func() error { return lw.Complete("a") },
		}
		for _, s := range steps {
			if err := s(); err != nil {
				return err
			}
		}
		return nil
	})
	if !strings.Contains(body, `"seq":3,"type":"arrive","time":2.5,"task":"b"`) || !strings.Contains(body, `"type":"preempt","time":10,"task":"a"`) {
		t.Fatalf("log lacks the stamped times:\n%s", body)
	}
	r, err := replay(body)
	if err != nil {
		t.Fatal(err)
	}
	if r.C.Running() != 0 {
		t.Fatalf("%d tasks still running at the end", r.C.Running())
	}
}

func TestTimedLogErrors(t *testing.T) {
	head := strings.SplitAfter(timedLog(t, func(*sim.LogWriter) error { return nil }), "\n")[0]
	v1 := strings.Replace(head, `"version":2`, `"version":1`, 1)
	arrive := `{"seq":1,"type":"arrive","time":0,"task":"a","request":{"cpu_milli":1000,"memory_mib":100,"num_gpu":2,"gpu_milli":1000}}` + "\n"
	arriveB := `{"seq":2,"type":"arrive","time":0,"task":"b","request":{"cpu_milli":1000,"memory_mib":100,"num_gpu":1,"gpu_milli":500}}` + "\n"
	startA := `{"seq":3,"type":"start","time":0,"task":"a","node":"n0","gpus":[0,1]}` + "\n"
	cases := map[string]struct{ body, want string }{
		"no time":        {head + `{"seq":1,"type":"arrive","task":"a","request":{"cpu_milli":1}}` + "\n", "line 2: event without a time"},
		"time goes back": {head + strings.Replace(arrive, `"time":0`, `"time":5`, 1) + arriveB, "line 3: time 0 before the previous event's 5"},
		"negative time":  {head + strings.Replace(arrive, `"time":0`, `"time":-1`, 1), "line 2: time -1"},
		"start in v1":    {v1 + arrive + arriveB + startA, `line 4: event type "start" needs a version-2 log`},
		// b starts on GPU 1 while a still holds both GPUs: the node would be over capacity.
		"over capacity": {head + arrive + arriveB + startA + `{"seq":4,"type":"start","time":3,"task":"b","node":"n0","gpus":[1]}` + "\n" +
			`{"seq":5,"type":"complete","time":3,"task":"a"}` + "\n", "GPU 1 has 0 milli free"},
		"complete waiting": {head + arrive + `{"seq":2,"type":"complete","time":1,"task":"a"}` + "\n", "not running"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := replay(tc.body); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestLogWriterChecksVersions(t *testing.T) {
	c, _ := sim.NewCluster([]sim.Node{{Name: "n0", CPU: 1, Mem: 1}}, nil)
	var buf bytes.Buffer
	lw, err := sim.NewLogWriter(&buf, sim.NewLogHeader(c, nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := lw.Complete("a"); err == nil || !strings.Contains(err.Error(), "need a version-2 log") {
		t.Fatalf("complete in a version-1 log: %v", err)
	}
	h := sim.NewLogHeader(c, nil)
	h.Version = 3
	if _, err := sim.NewLogWriter(&buf, h); err == nil {
		t.Fatal("version 3 accepted")
	}
	body := timedLog(t, func(lw *sim.LogWriter) error {
		if err := lw.SetTime(5); err != nil {
			return err
		}
		if err := lw.SetTime(4); err == nil {
			t.Error("the clock went back without an error")
		}
		return nil
	})
	if strings.Count(body, "\n") != 1 {
		t.Fatalf("events written: %q", body)
	}
}

// A header may count GPUs by type instead of listing nodes (the DL-job world's logs): only in
// version 2, never both, and sim.Replayer, which places on nodes, refuses it.
func TestGPUTypesHeader(t *testing.T) {
	const types = `"gpu_types":[{"model":"V100","gpus":4}]`
	cases := map[string]struct{ header, want string }{
		"ok":        {`{"schema":"schedrl.decision-log","version":2,"type":"header","nodes":[],` + types + `}`, ""},
		"version 1": {`{"schema":"schedrl.decision-log","version":1,"type":"header","nodes":[],` + types + `}`, "line 1: a gpu_types log must be version 2"},
		"both":      {`{"schema":"schedrl.decision-log","version":2,"type":"header","nodes":[{"name":"n","cpu_milli":1,"memory_mib":1,"gpu":1}],` + types + `}`, "both nodes and gpu_types"},
		"neither":   {`{"schema":"schedrl.decision-log","version":2,"type":"header","nodes":[]}`, "lists no nodes"},
	}
	for name, c := range cases {
		lr, err := sim.NewLogReader(strings.NewReader(c.header + "\n"))
		if c.want != "" {
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: %v, want %q", name, err, c.want)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := sim.NewReplayer(lr.Header); err == nil || !strings.Contains(err.Error(), "jobs.ReplayLog") {
			t.Errorf("replayer on a gpu_types header: %v, want it refused", err)
		}
	}
}
