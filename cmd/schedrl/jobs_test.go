package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/schedrl/schedrl/internal/repotest"
	"github.com/schedrl/schedrl/jobs"
)

func TestRunJobsContract(t *testing.T) {
	opts := &jobsOptions{
		Trace: repotest.Data("gavel", "reference", "gen-36x3-lam1200-seed0.trace"), Cluster: "36:36:36",
		Throughputs: repotest.Data("gavel", "simulation_throughputs.json"), Policy: "fifo", Round: 360,
		Window: "100-400", Seed: 0, Compat: "gavel", JSON: true,
	}
	var out bytes.Buffer
	opts.Out = &out
	if err := runJobs(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, k := range []string{"avg_jct_s", "makespan_s", "utilization", "jobs", "wall_seconds", "jct_s"} {
		if _, ok := got[k]; !ok {
			t.Errorf("no %q in %s", k, out.String())
		}
	}
	// Gavel's simulator on this configuration: avg JCT 57,429.847 s, makespan 994,310.746 s.
	if v := got["avg_jct_s"].(float64); math.Abs(v-57429.847) > 0.01 {
		t.Errorf("avg_jct_s %v, want Gavel's 57429.847", v)
	}
	if v := got["makespan_s"].(float64); math.Abs(v-994310.746) > 0.01 {
		t.Errorf("makespan_s %v, want Gavel's 994310.746", v)
	}
	jct := got["jct_s"].(map[string]any)
	if got["jobs"].(float64) != 300 || len(jct) != 300 || jct["100"] == nil || jct["99"] != nil {
		t.Errorf("jobs %v, %d JCTs: want the 300 jobs 100-399", got["jobs"], len(jct))
	}
}

// Same seed, same output byte for byte, wall_seconds aside.
func TestRunJobsSameSeedSameBytes(t *testing.T) {
	run := func() string {
		opts := &jobsOptions{Trace: repotest.Data("gavel", "reference", "gen-16x3-lam2400-seed1-multigpu.trace"), Cluster: "16:16:16",
			Throughputs: repotest.Data("gavel", "simulation_throughputs.json"), Policy: "max_min_fairness", Round: 360,
			Window: "0-300", Seed: 5, Compat: "gavel", JSON: true}
		var out bytes.Buffer
		opts.Out = &out
		if err := runJobs(context.Background(), opts); err != nil {
			t.Fatal(err)
		}
		return regexp.MustCompile(`"wall_seconds": [0-9.e-]+`).ReplaceAllString(out.String(), "")
	}
	if a, b := run(), run(); a != b {
		t.Errorf("two runs with seed 5 print different JSON")
	}
}

// An openb pod list as the trace runs the openb timed-task world on the default node list.
func TestRunJobsHandsOpenbTracesToTheTimedTaskWorld(t *testing.T) {
	o := defaultOpenbJobsOptions()
	o.Count = 2000
	var out bytes.Buffer
	opts := &jobsOptions{Out: &out, Trace: repotest.OpenbPods("default"), Load: 0.8, Seed: 3, JSON: true, Openb: o}
	t.Chdir(repotest.Root())
	if err := runJobs(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	var got openbJobsSummary
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Queue != "backfill" || got.Policy != "fgd" || got.Arrived != 2000 || got.Jobs != 2000 || got.AllocMean <= 0 {
		t.Errorf("queue %q placer %q arrived %d measured %d allocation %.2f%%: want backfill, fgd, 2000, 2000, > 0",
			got.Queue, got.Policy, got.Arrived, got.Jobs, got.AllocMean)
	}
}

func TestRunJobsErrors(t *testing.T) {
	trace := repotest.Data("gavel", "reference", "gen-8x3-lam3600-seed0.trace")
	table := repotest.Data("gavel", "simulation_throughputs.json")
	cases := map[string]struct {
		opts jobsOptions
		want string
	}{
		"openb queue":   {jobsOptions{Trace: repotest.OpenbPods("default"), Policy: "lottery", Openb: defaultOpenbJobsOptions()}, `queue discipline "lottery"`},
		"openb nodes":   {jobsOptions{Trace: trace, Nodes: repotest.OpenbNodes(), Openb: defaultOpenbJobsOptions()}, "gen-8x3-lam3600-seed0.trace"},
		"cluster":       {jobsOptions{Trace: trace, Cluster: "8:8", Throughputs: table, Policy: "fifo"}, `cluster "8:8"`},
		"window":        {jobsOptions{Trace: trace, Cluster: "8:8:8", Throughputs: table, Policy: "fifo", Window: "300-0"}, "--window"},
		"policy":        {jobsOptions{Trace: trace, Cluster: "8:8:8", Throughputs: table, Policy: "lottery"}, `unknown policy "lottery"`},
		"compat policy": {jobsOptions{Trace: trace, Cluster: "8:8:8", Throughputs: table, Policy: "srtf", Compat: "gavel"}, "no Gavel-compatible mode"},
		"load":          {jobsOptions{Trace: trace, Cluster: "8:8:8", Throughputs: table, Policy: "fifo", Load: 1}, "--load"},
	}
	for name, c := range cases {
		var out bytes.Buffer
		c.opts.Out = &out
		err := runJobs(context.Background(), &c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to contain %q", name, err, c.want)
		}
	}
}

// --log writes the DL-job world's decision log: the same seed writes the same bytes, it
// replays within every GPU type's capacity, and the JSON reports finish-time fairness.
func TestRunJobsDecisionLog(t *testing.T) {
	dir := t.TempDir()
	run := func(name string) (map[string]any, []byte) {
		path := filepath.Join(dir, name)
		o := defaultOpenbJobsOptions()
		o.Log = path
		var out bytes.Buffer
		opts := &jobsOptions{Out: &out, Trace: repotest.Data("gavel", "reference", "gen-8x3-lam3600-seed0.trace"), Cluster: "8:8:8",
			Throughputs: repotest.Data("gavel", "simulation_throughputs.json"), Policy: "max_min_fairness_perf", Round: 360,
			Window: "0-100", Seed: 2, JSON: true, Openb: o}
		if err := runJobs(context.Background(), opts); err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		if err := json.Unmarshal(out.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		log, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return got, log
	}
	got, a := run("a.jsonl")
	_, b := run("b.jsonl")
	if !bytes.Equal(a, b) {
		t.Errorf("same seed, two different logs")
	}
	events, err := jobs.ReplayLog(bytes.NewReader(a))
	if err != nil || events < 200 {
		t.Errorf("replay: %d events, %v", events, err)
	}
	mean, max, above := got["ftf_rho_mean"].(float64), got["ftf_rho_max"].(float64), got["ftf_rho_above_one"].(float64)
	if !(mean > 0 && max >= mean && above >= 0 && above <= 1) || got["log"] != filepath.Join(dir, "a.jsonl") {
		t.Errorf("ftf_rho mean %v max %v above one %v, log %v", mean, max, above, got["log"])
	}
}

// A run that fails leaves no log behind.
func TestRunJobsFailedRunLeavesNoLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.jsonl")
	o := defaultOpenbJobsOptions()
	o.Log = path
	var out bytes.Buffer
	opts := &jobsOptions{Out: &out, Trace: repotest.Data("gavel", "reference", "gen-8x3-lam3600-seed0.trace"), Cluster: "8:8:8",
		Throughputs: repotest.Data("gavel", "simulation_throughputs.json"), Policy: "srtf", Compat: "gavel", Openb: o}
	if err := runJobs(context.Background(), opts); err == nil {
		t.Fatal("srtf in compat mode ran")
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed run left %s (%v)", path, err)
	}
}
