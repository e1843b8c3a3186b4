package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/schedrl/schedrl/internal/repotest"
	"github.com/schedrl/schedrl/sim"
)

// openbJobs runs runOpenbJobs with JSON output and decodes it.
func openbJobs(t *testing.T, o openbJobsOptions) map[string]any {
	t.Helper()
	o.JSON = true
	var out bytes.Buffer
	o.Out = &out
	if err := runOpenbJobs(context.Background(), &o); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(out.Bytes(), &m); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	return m
}

func TestOpenbJobsLogIsReproducibleAndReplays(t *testing.T) {
	dir := t.TempDir()
	o := defaultOpenbJobsOptions()
	o.Nodes, o.Trace, o.Load, o.Seed, o.Count, o.Warmup = repotest.OpenbNodes(), repotest.OpenbPods("default"), 1.0, 7, 3000, 300
	o.Series = filepath.Join(dir, "series.csv")
	var logs [2][]byte
	for k := range logs {
		o.Log = filepath.Join(dir, "run"+string(rune('a'+k))+".jsonl")
		m := openbJobs(t, o)
		for _, key := range []string{"avg_jct_s", "makespan_s", "utilization", "jobs", "wall_seconds", "jct_s", "alloc_gpu_mean_pct",
			"offered_load", "gpu_queue_delay_mean_s", "gpu_queue_delay_p95_s", "queue_delay_by_kind"} {
			if _, ok := m[key]; !ok {
				t.Fatalf("summary lacks %s", key)
			}
		}
		if m["tasks_arrived"].(float64) != 3000 || m["jobs"].(float64) == 0 || len(m["jct_s"].(map[string]any)) != int(m["jobs"].(float64)) {
			t.Fatalf("tasks %v, jobs %v, %d JCTs", m["tasks_arrived"], m["jobs"], len(m["jct_s"].(map[string]any)))
		}
		var err error
		if logs[k], err = os.ReadFile(o.Log); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(logs[0], logs[1]) {
		t.Fatal("the same seed wrote two different logs")
	}
	series, err := os.ReadFile(o.Series)
	if err != nil || !strings.HasPrefix(string(series), "time_s,alloc_gpu_pct,frag_gpu,frag_ratio_pct,running,waiting,free_gpus,free_8gpu_nodes\n0,") {
		t.Fatalf("series: %v %.80q", err, series)
	}

	// Replay: every start must fit the node at that instant; the run ends empty.
	lr, err := sim.NewLogReader(bytes.NewReader(logs[0]))
	if err != nil {
		t.Fatal(err)
	}
	if lr.Header.Version != sim.LogVersionTimed {
		t.Fatalf("log version %d", lr.Header.Version)
	}
	r, err := sim.NewReplayer(lr.Header)
	if err != nil {
		t.Fatal(err)
	}
	starts := 0
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
		if ev.Type == sim.EvStart {
			starts++
		}
	}
	if starts != 3000 || r.C.Running() != 0 {
		t.Fatalf("%d starts, %d still running at the end", starts, r.C.Running())
	}
}

func TestOpenbJobsTraceTimestamps(t *testing.T) {
	o := defaultOpenbJobsOptions()
	o.Nodes, o.Trace = repotest.OpenbNodes(), repotest.OpenbPods("default")
	m := openbJobs(t, o)
	// 8,152 trace tasks of which 897 never ran (no scheduled_time): no run-time samples.
	if m["trace_pending"].(float64) != 897 || m["tasks_arrived"].(float64) != 8152-897 || m["load"].(float64) != 0 {
		t.Fatalf("pending %v, arrived %v", m["trace_pending"], m["tasks_arrived"])
	}
	var text bytes.Buffer
	o.JSON, o.Out = false, &text
	if err := runOpenbJobs(context.Background(), &o); err != nil || !strings.Contains(text.String(), "run-time cap 14400 s (") {
		t.Fatalf("%v\n%s", err, text.String())
	}
}

func TestOpenbJobsBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	nodes := write("nodes.csv", "sn,cpu_milli,memory_mib,gpu,model\nn0,8000,8000,2,T4\n")
	head := "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
	pods := write("pods.csv", head+"p0,1000,100,1,500,,LS,Running,0,100,5\n")
	cases := []struct {
		name string
		edit func(o *openbJobsOptions)
		want string
	}{
		{"negative arrival", func(o *openbJobsOptions) {
			o.Trace = write("neg.csv", head+"p0,1000,100,1,500,,LS,Running,0,100,5\np1,1000,100,1,500,,LS,Running,-30,100,5\n")
		}, `neg.csv:3:\d+ \(creation_time\): negative value -30`},
		{"malformed node line", func(o *openbJobsOptions) {
			o.Nodes = write("badnodes.csv", "sn,cpu_milli,memory_mib,gpu,model\nn0,8000,8000,2,T4\nn1,8000\n")
		}, `badnodes.csv:3: missing columns`},
		{"malformed pod line", func(o *openbJobsOptions) {
			o.Trace = write("badpods.csv", head+"p0,1000,100,1,500,,LS,Running,0,100,5\np1,1000,lots,1,500,,LS,Running,0,100,5\n")
		}, `badpods.csv:3:\d+ \(memory_mib\): "lots" is not an integer`},
		{"unknown policy", func(o *openbJobsOptions) { o.Policy = "telepathy" }, `unknown placement policy "telepathy" \(valid: .*fgd`},
		{"unknown queue", func(o *openbJobsOptions) { o.Queue = "lottery" }, `unknown queue discipline "lottery" \(valid: backfill, fifo\)`},
		{"negative load", func(o *openbJobsOptions) { o.Load = -1 }, `load -1`},
		{"poisson without an end", func(o *openbJobsOptions) { o.Load = 1 }, `needs a task count or a duration`},
		{"warm-up too long", func(o *openbJobsOptions) { o.Warmup = 1e9 }, `warm-up 1e\+09 s is not before the last arrival`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := defaultOpenbJobsOptions()
			o.Nodes, o.Trace, o.JSON = nodes, pods, true
			o.Log = filepath.Join(dir, tc.name+".jsonl")
			tc.edit(&o)
			var out bytes.Buffer
			o.Out = &out
			err := runOpenbJobs(context.Background(), &o)
			if err == nil || !regexp.MustCompile(tc.want).MatchString(err.Error()) {
				t.Fatalf("got %v, want an error matching %q", err, tc.want)
			}
			if out.Len() != 0 {
				t.Fatalf("printed %q on error", out.String())
			}
			if _, err := os.Stat(o.Log); !os.IsNotExist(err) {
				t.Fatalf("a log was left behind: %v", err)
			}
		})
	}
}

// A placement checkpoint is a placer of the openb timed world, by directory or registry
// reference: `defrag online` on a 64-node sub-cluster gives the same run either way, runs it
// beside a rescheduler, and `jobs` runs it too.
func TestOpenbPlacerCheckpoint(t *testing.T) {
	cfg, ckpt := placementRegistry(t)
	online := func(placer, method string) map[string]any {
		t.Helper()
		var out bytes.Buffer
		o := onlineOptions(method)
		o.Placer, o.Registry, o.SampleNodes, o.Load, o.Out = placer, cfg.Registry, 64, 0.9, &out
		o.Duration, o.Warmup = 2*3600, 1800
		if err := runDefragOnline(context.Background(), o); err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(out.Bytes(), &m); err != nil {
			t.Fatalf("%v\n%s", err, out.String())
		}
		return m
	}
	dir, ref := online("ckpt:"+ckpt, "none"), online("placement@champion", "none")
	if dir["tasks"].(float64) == 0 || dir["frag_ratio_mean_pct"] != ref["frag_ratio_mean_pct"] || dir["completion_mean_s"] != ref["completion_mean_s"] {
		t.Errorf("ckpt:DIR %v, %v; placement@champion %v, %v", dir["frag_ratio_mean_pct"], dir["completion_mean_s"], ref["frag_ratio_mean_pct"], ref["completion_mean_s"])
	}
	if ref["placer"] != "placement@champion" {
		t.Errorf("placer %v", ref["placer"])
	}
	// A rescheduler plans its targets on copies of the cluster, asking the placer there.
	if m := online("ckpt:"+ckpt, "high-node-utilization"); m["invocations"].(float64) == 0 {
		t.Errorf("high-node-utilization with a checkpoint placer: %v", m)
	}
	o := defaultOpenbJobsOptions()
	o.Nodes, o.Trace, o.Load, o.Seed, o.Count, o.Config = repotest.OpenbNodes(), repotest.OpenbPods("default"), 0.9, 7, 300, cfg
	o.Policy = "ckpt:" + ckpt
	if m := openbJobs(t, o); m["policy"] != o.Policy {
		t.Errorf("jobs with a checkpoint placer: %v", m)
	}
	o.Policy = "ckpt:" + filepath.Join(t.TempDir(), "none")
	o.Out = io.Discard
	if err := runOpenbJobs(context.Background(), &o); err == nil || !strings.Contains(err.Error(), "none") {
		t.Errorf("a missing checkpoint: %v", err)
	}
}
