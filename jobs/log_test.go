package jobs

import (
	"bytes"
	"strings"
	"testing"

	"github.com/schedrl/schedrl/internal/repotest"
	"github.com/schedrl/schedrl/sim"
)

// loggedRun runs the first jobs of a reference trace with a decision log and returns the log.
func loggedRun(t *testing.T, trace string, jobs int, spec, policy, compat string, seed uint64) (Result, []byte) {
	t.Helper()
	tr, err := ReadTrace(repotest.Data("gavel", "reference", trace))
	if err != nil {
		t.Fatal(err)
	}
	tr.Jobs = tr.Jobs[:jobs]
	c := cluster(t, spec)
	var buf bytes.Buffer
	lw, err := sim.NewLogWriter(&buf, LogHeader(c, map[string]string{"policy": policy}))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(tr, loadTable(t), Config{Cluster: c, Policy: policy, Seed: seed, Compat: compat, Log: lw})
	if err != nil {
		t.Fatalf("%s %s %s: %v", trace, policy, compat, err)
	}
	return res, buf.Bytes()
}

// Every policy, both round models, on the first 80 jobs of the multi-GPU trace: the log
// replays with no GPU type over capacity at any instant, every job arrives, starts and
// completes once, and one seed writes one log.
func TestDecisionLogReplaysWithinCapacity(t *testing.T) {
	const trace, jobs = "gen-16x3-lam2400-seed1-multigpu.trace", 80
	runs := []struct{ policy, compat string }{{"fifo", CompatGavel}, {"max_min_fairness", CompatGavel}, {"max_min_fairness_perf", CompatGavel}}
	for _, p := range Policies() {
		runs = append(runs, struct{ policy, compat string }{p, CompatNone})
	}
	for _, r := range runs {
		res, log := loggedRun(t, trace, jobs, "12:12:12", r.policy, r.compat, 3)
		events, err := ReplayLog(bytes.NewReader(log))
		if err != nil {
			t.Errorf("%s/%s: replay: %v", r.compat, r.policy, err)
			continue
		}
		text := string(log)
		for _, typ := range []string{sim.EvArrive, sim.EvComplete} {
			if n := strings.Count(text, `"type":"`+typ+`","time":`); n != jobs {
				t.Fatalf("%s/%s: %d %s events, want %d", r.compat, r.policy, n, typ, jobs)
			}
		}
		for idx := range jobs {
			if !strings.Contains(text, `"type":"start","time":`) || !strings.Contains(text, `"task":"`+jobName(idx)+`","gpu_type"`) {
				t.Errorf("%s/%s: %s never starts", r.compat, r.policy, jobName(idx))
			}
		}
		if len(res.JCT) != jobs {
			t.Errorf("%s/%s: %d JCTs, want %d", r.compat, r.policy, len(res.JCT), jobs)
		}
		if _, again := loggedRun(t, trace, jobs, "12:12:12", r.policy, r.compat, 3); !bytes.Equal(log, again) {
			t.Errorf("%s/%s: the same seed wrote two different logs", r.compat, r.policy)
		}
		t.Logf("%s/%s: %d events, %d preemptions", r.compat, r.policy, events, strings.Count(text, `"type":"preempt"`))
	}
}

// A lone job's log is exactly its life: arrive at 100, start on the V100 at 100, complete at
// 100 + steps/throughput.
func TestDecisionLogOfALoneJob(t *testing.T) {
	table := handTable(map[string][NumGPUs]float64{"m": {2.5, 2, 1}})
	var buf bytes.Buffer
	c := cluster(t, "1:1:1")
	lw, err := sim.NewLogWriter(&buf, LogHeader(c, nil))
	if err != nil {
		t.Fatal(err)
	}
	mustRun(t, handTrace(handJob{"m", 10000, 100}), table, Config{Cluster: c, Policy: "fifo", Log: lw})
	want := `{"schema":"schedrl.decision-log","version":2,"type":"header","nodes":null,"gpu_types":[{"model":"V100","gpus":1},{"model":"P100","gpus":1},{"model":"K80","gpus":1}]}
{"seq":1,"type":"arrive","time":100,"task":"job-0","request":{"cpu_milli":0,"memory_mib":0,"num_gpu":1,"gpu_milli":1000,"gpu_spec":"V100|P100|K80"}}
{"seq":2,"type":"start","time":100,"task":"job-0","gpu_type":"V100"}
{"seq":3,"type":"complete","time":4100,"task":"job-0"}
`
	if buf.String() != want {
		t.Errorf("log:\n%s\nwant:\n%s", buf.String(), want)
	}
}

// The replayer is a check that can fail: a start beyond a type's capacity, on a type the
// request does not allow, or of a job that never arrived is an error naming the line.
func TestReplayLogRefusesOverCapacity(t *testing.T) {
	head := `{"schema":"schedrl.decision-log","version":2,"type":"header","nodes":[],"gpu_types":[{"model":"V100","gpus":4}]}
{"seq":1,"type":"arrive","time":0,"task":"job-0","request":{"cpu_milli":0,"memory_mib":0,"num_gpu":3,"gpu_milli":1000,"gpu_spec":"V100"}}
{"seq":2,"type":"arrive","time":0,"task":"job-1","request":{"cpu_milli":0,"memory_mib":0,"num_gpu":2,"gpu_milli":1000,"gpu_spec":"V100"}}
{"seq":3,"type":"start","time":0,"task":"job-0","gpu_type":"V100"}
`
	cases := map[string]struct{ tail, want string }{
		"over capacity":  {`{"seq":4,"type":"start","time":5,"task":"job-1","gpu_type":"V100"}`, "line 5: event 4 (start job-1) at 5 s: V100 over capacity: 3 of 4 GPUs in use, job needs 2"},
		"freed first":    {`{"seq":4,"type":"complete","time":5,"task":"job-0"}` + "\n" + `{"seq":5,"type":"start","time":5,"task":"job-1","gpu_type":"V100"}`, ""},
		"type":           {`{"seq":4,"type":"start","time":5,"task":"job-1","gpu_type":"K80"}`, `unknown gpu_type "K80"`},
		"never arrived":  {`{"seq":4,"type":"complete","time":5,"task":"job-7"}`, "job never arrived"},
		"time goes back": {`{"seq":4,"type":"complete","time":-1,"task":"job-0"}`, "line 5: time -1"},
	}
	for name, c := range cases {
		_, err := ReplayLog(strings.NewReader(head + c.tail + "\n"))
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}
