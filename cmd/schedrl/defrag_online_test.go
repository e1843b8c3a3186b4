package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/internal/repotest"
)

func onlineOptions(method string) *defragOnlineOptions {
	o := defaultDefragOnlineOptions()
	o.Nodes, o.Pods, o.Load, o.Seed, o.Method = repotest.OpenbNodes(), repotest.OpenbPods("default"), 1.1, 3, method
	o.Duration, o.Warmup, o.Cap, o.JSON = 3*3600, 3600, 3600, true
	o.Online.Every, o.Online.HeadWait = 300, 60
	return &o
}

func TestDefragOnlineJSON(t *testing.T) {
	var out bytes.Buffer
	o := onlineOptions("make-room")
	o.Out = &out
	if err := runDefragOnline(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"gpu_queue_delay_mean_s", "gpu_queue_delay_p95_s", "whole_gpu_queue_delay_mean_s",
		"whole_gpu_queue_delay_p95_s", "alloc_gpu_mean_pct", "migrations", "downtime_s", "tasks", "wall_seconds"} {
		if _, ok := got[k]; !ok {
			t.Errorf("no %s in %s", k, out.String())
		}
	}
	snakeCaseKeys(t, "", got)
	if got["migrations"].(float64) == 0 || got["tasks"].(float64) < 1000 {
		t.Errorf("migrations %v, tasks %v", got["migrations"], got["tasks"])
	}
}

// The DRR contract: the periodic trigger on a 64-node sample takes DRR's budget for 64 nodes
// (5 an hour, threshold 0.5), the oracle repacks at no cost, and the JSON has the fragmentation
// rate, readiness and the burst's wait.
func TestDefragOnlinePeriodicJSON(t *testing.T) {
	for _, method := range []string{"greedy", "oracle"} {
		var out bytes.Buffer
		o := onlineOptions(method)
		o.Out, o.Load, o.SampleNodes, o.Burst = &out, 0.7, 64, 2
		o.Online.Trigger, o.Explicit = "periodic", map[string]bool{}
		if err := runDefragOnline(context.Background(), o); err != nil {
			t.Fatal(err)
		}
		var got struct {
			Nodes      int                `json:"nodes"`
			Frag       *float64           `json:"frag_ratio_mean_pct"`
			FreeGPUs   float64            `json:"free_gpus_mean"`
			Burst      map[string]float64 `json:"burst_queue_delay"`
			Migrations int                `json:"migrations"`
			Downtime   float64            `json:"downtime_s"`
			Online     struct {
				Every         float64 `json:"every_s"`
				Budget        float64 `json:"budget"`
				CapPerHour    float64 `json:"cap_per_hour"`
				UtilThreshold float64 `json:"util_threshold"`
			}
		}
		if err := json.Unmarshal(out.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		if got.Nodes != 64 || got.Frag == nil || *got.Frag <= 0 || got.FreeGPUs <= 0 || got.Burst["tasks"] != 2 {
			t.Errorf("%s: %s", method, out.String())
		}
		if got.Online.Every != 3600 || got.Online.Budget != 5 || got.Online.CapPerHour != 5 || got.Online.UtilThreshold != 0.5 {
			t.Errorf("%s: periodic config %+v", method, got.Online)
		}
		if method == "oracle" && (got.Migrations == 0 || got.Downtime != 0) {
			t.Errorf("oracle: %d tasks moved, %v s downtime", got.Migrations, got.Downtime)
		}
	}
}

// Out-of-range keys are refused before any work: the pod list does not exist, and the error
// names the key, not the file.
func TestDefragOnlineRefusesBadKeys(t *testing.T) {
	for key, mutate := range map[string]func(*defragOnlineOptions){
		"load":         func(o *defragOnlineOptions) { o.Load = 0 },
		"budget":       func(o *defragOnlineOptions) { o.Online.Budget = -1 },
		"cap_per_hour": func(o *defragOnlineOptions) { o.Online.CapPerHour = 0 },
		"every_s":      func(o *defragOnlineOptions) { o.Online.Every = -5 },
		"head_wait_s":  func(o *defragOnlineOptions) { o.Online.HeadWait = -1 },
		"warmup_s":     func(o *defragOnlineOptions) { o.Warmup = o.Duration },
		"demos":        func(o *defragOnlineOptions) { o.Demos, o.Method = "logs", "none" },
		"trigger":      func(o *defragOnlineOptions) { o.Online.Trigger = "hourly" },
		"head-wait": func(o *defragOnlineOptions) {
			o.Online.Trigger, o.Explicit = "periodic", map[string]bool{"head-wait": true}
		},
		"sample-nodes": func(o *defragOnlineOptions) { o.SampleNodes = -1 },
		"burst":        func(o *defragOnlineOptions) { o.Burst = -2 },
	} {
		o := onlineOptions("greedy")
		o.Pods = "missing.csv"
		o.Out = &bytes.Buffer{}
		mutate(o)
		if err := runDefragOnline(context.Background(), o); err == nil || !strings.Contains(err.Error(), key+":") {
			t.Errorf("%s: error %v", key, err)
		}
	}
	o := onlineOptions("nonsense")
	o.Out = &bytes.Buffer{}
	if err := runDefragOnline(context.Background(), o); err == nil || !strings.Contains(err.Error(), "make-room") {
		t.Errorf("unknown method: %v", err)
	}
}

// The pooled cluster (a task starts whenever the cluster's free GPUs suffice) queues whole-GPU
// tasks no longer than the real cluster with the same arrivals, and runs the same tasks.
func TestDefragOnlinePooledBound(t *testing.T) {
	run := func(pooled bool) map[string]any {
		var out bytes.Buffer
		o := onlineOptions("none")
		o.Pooled, o.Out = pooled, &out
		if err := runDefragOnline(context.Background(), o); err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		if err := json.Unmarshal(out.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	real, pooled := run(false), run(true)
	if pooled["method"] != "pooled" || pooled["tasks"] != real["tasks"] {
		t.Fatalf("pooled %v (%v tasks), real %v tasks", pooled["method"], pooled["tasks"], real["tasks"])
	}
	for _, k := range []string{"whole_gpu_queue_delay_mean_s", "gpu_queue_delay_mean_s"} {
		if p, r := pooled[k].(float64), real[k].(float64); p > r {
			t.Errorf("%s: pooled %.1f s > real %.1f s", k, p, r)
		}
	}
	o := onlineOptions("greedy")
	o.Pooled, o.Out = true, &bytes.Buffer{}
	if err := runDefragOnline(context.Background(), o); err == nil || !strings.Contains(err.Error(), "pooled:") {
		t.Errorf("pooled with a method: %v", err)
	}
}

// snakeCaseKeys fails on a key anywhere in v that is not the documented snake_case.
func snakeCaseKeys(t *testing.T, path string, v any) {
	t.Helper()
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			// The delay classes (one-gpu, multi-gpu) are documented names, not keys.
			if !strings.HasPrefix(path, "queue_delay_by_kind.") && (strings.ToLower(k) != k || strings.ContainsAny(k, " -")) {
				t.Errorf("JSON key %s%s is not snake_case", path, k)
			}
			snakeCaseKeys(t, path+k+".", x)
		}
	case []any:
		for _, x := range v {
			snakeCaseKeys(t, path, x)
		}
	}
}

// TestDefragOnlineModelNotPublishedSaysWhichPipeline: --model defrag@champion before the
// pipeline that publishes it has run names the command to run.
func TestDefragOnlineModelNotPublishedSaysWhichPipeline(t *testing.T) {
	o := onlineOptions("none")
	o.Model, o.Out = "defrag@champion", &bytes.Buffer{}
	o.Registry = config.Default().Registry
	o.Registry.Store = "file://" + filepath.Join(t.TempDir(), "registry") // a fresh clone has none yet
	err := runDefragOnline(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), "make pipeline CONFIG=configs/defrag-online.yaml") {
		t.Fatalf("err = %v, want one naming the pipeline to run", err)
	}
}

// The command starts from the defrag_online section (built-in, or --config's), and the flags
// the user sets override its keys; a bad key from the config is refused naming the key.
func TestDefragOnlineStartsFromTheConfigSection(t *testing.T) {
	parse := func(args ...string) (*defragOnlineOptions, error) {
		var got *defragOnlineOptions
		cmd := newDefragOnlineCmd(func(_ context.Context, o *defragOnlineOptions) error { got = o; return nil })
		cmd.SetArgs(args)
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetErr(&bytes.Buffer{})
		return got, cmd.Execute()
	}
	def := config.Default().DefragOnline
	smoke := filepath.Join(repoRoot, "configs", "defrag-online-smoke.yaml")
	for _, c := range []struct {
		args                    []string
		duration, warmup, cap   float64
		every, headWait, budget float64
	}{
		{nil, def.Duration, def.Warmup, def.Cap, def.Every, def.HeadWait, float64(def.Budget)},
		{[]string{"--config", smoke}, 7200, 1800, 3600, 300, 60, float64(def.Budget)},
		{[]string{"--config", smoke, "--duration", "5000", "--budget", "3"}, 5000, 1800, 3600, 300, 60, 3},
		{[]string{"--set", "defrag_online.every_s=120", "--warmup", "600"}, def.Duration, 600, def.Cap, 120, def.HeadWait, float64(def.Budget)},
	} {
		o, err := parse(c.args...)
		if err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		if o.Duration != c.duration || o.Warmup != c.warmup || o.Cap != c.cap || o.Online.Every != c.every ||
			o.Online.HeadWait != c.headWait || float64(o.Online.Budget) != c.budget || o.Online.Trigger != "queue" {
			t.Errorf("%v: duration %v warmup %v cap %v, trigger %+v", c.args, o.Duration, o.Warmup, o.Cap, o.Online)
		}
	}
	if _, err := parse("--set", "defrag_online.duration_s=-1"); err == nil || !strings.Contains(err.Error(), "defrag_online.duration_s") {
		t.Errorf("a bad section key: %v", err)
	}
	o := onlineOptions("greedy")
	o.Duration, o.Out = -1, &bytes.Buffer{}
	if err := runDefragOnline(context.Background(), o); err == nil || !strings.Contains(err.Error(), "duration_s: must be > 0") {
		t.Errorf("a bad --duration: %v", err)
	}
}
