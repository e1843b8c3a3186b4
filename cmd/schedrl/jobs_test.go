package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
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

// Each world's subcommand prints what the old spelling of the same run printed, and only the
// old spelling says on stderr which subcommand replaces it.
func TestJobsSubcommandsMatchTheOldSpelling(t *testing.T) {
	t.Chdir(repotest.Root())
	gavel := []string{"--trace", "data/gavel/reference/gen-8x3-lam3600-seed0.trace", "--cluster", "8:8:8", "--policy", "fifo",
		"--round", "360", "--window", "0-300", "--seed", "0", "--compat", "gavel", "--json"}
	fungible := []string{"--cluster", "8:8:8", "--policy", "synergy-tune", "--order", "srtf", "--generate", "jobs=30,lam=400,multigpu", "--seed", "3", "--json"}
	openb := []string{"--trace", "data/openb/openb_pod_list_default.csv", "--load", "0.8", "--tasks", "2000", "--seed", "3", "--json"}
	run := func(args []string) (stdout, stderr string) {
		t.Helper()
		var out, errb bytes.Buffer
		root := newRootCmd()
		root.SetOut(&out)
		root.SetErr(&errb)
		if code := execute(root, args, &errb); code != 0 {
			t.Fatalf("schedrl %s: exit %d\n%s", strings.Join(args, " "), code, errb.String())
		}
		return regexp.MustCompile(`"wall_seconds": [0-9.e-]+`).ReplaceAllString(out.String(), ""), errb.String()
	}
	for _, c := range []struct {
		world    string
		old, new []string
	}{
		{"gavel", gavel, gavel},
		{"fungible", append([]string{"--servers-gpus", "8"}, fungible...), fungible},
		{"openb", append(openb, "--policy", "fifo"), append(openb, "--queue", "fifo")},
	} {
		oldOut, oldErr := run(append([]string{"jobs"}, c.old...))
		newOut, newErr := run(append([]string{"jobs", c.world}, c.new...))
		if oldOut != newOut || !strings.Contains(oldOut, `"jct_s"`) {
			t.Errorf("%s: the subcommand printed\n%.300s\nthe old spelling\n%.300s", c.world, newOut, oldOut)
		}
		if !strings.Contains(oldErr, "this run is `schedrl jobs "+c.world+"`") || newErr != "" {
			t.Errorf("%s: old spelling's stderr %q, the subcommand's %q", c.world, oldErr, newErr)
		}
	}
}

// A subcommand has only its world's flags: another world's is refused, not ignored.
func TestJobsSubcommandsRefuseOtherWorldsFlags(t *testing.T) {
	for _, args := range [][]string{
		{"jobs", "gavel", "--trace", "x.trace", "--order", "srtf"},
		{"jobs", "gavel", "--trace", "x.trace", "--placer", "fgd"},
		{"jobs", "fungible", "--generate", "jobs=5,lam=60", "--compat", "gavel"},
		{"jobs", "fungible", "--generate", "jobs=5,lam=60", "--window", "0-5"},
		{"jobs", "openb", "--trace", "x.csv", "--policy", "fifo"},
		{"jobs", "openb", "--trace", "x.csv", "--round", "360"},
	} {
		var errb bytes.Buffer
		root := newRootCmd()
		root.SetOut(io.Discard)
		if code := execute(root, args, &errb); code == 0 || !strings.Contains(errb.String(), "unknown flag: "+args[4]) {
			t.Errorf("schedrl %s: exit %d, %q", strings.Join(args, " "), code, errb.String())
		}
	}
}
