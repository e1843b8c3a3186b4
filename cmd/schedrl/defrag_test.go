package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedrl/schedrl/defrag"
	"github.com/schedrl/schedrl/internal/repotest"
)

// defragCLI runs `schedrl defrag ARGS...` in process.
func defragCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	root := newRootCmd()
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(append([]string{"defrag"}, args...))
	err := root.Execute()
	return out.String(), err
}

func TestDefragSnapshotAndPlan(t *testing.T) {
	dir := t.TempDir()
	snap, plan := filepath.Join(dir, "snap.json"), filepath.Join(dir, "plan.json")
	out, err := defragCLI(t, "snapshot", "--nodes", repotest.OpenbNodes(), "--pods", repotest.OpenbPods("default"),
		"--policy", "fgd", "--seed", "51", "--departures", "0.1", "--out", snap)
	if err != nil || !strings.Contains(out, "1213 nodes") {
		t.Fatalf("snapshot: %v\n%s", err, out)
	}
	out, err = defragCLI(t, "plan", "--snapshot", snap, "--policy", "frag-one-pod", "--budget", "20", "--samples", "2", "--out", plan, "--log", filepath.Join(dir, "plan.jsonl"))
	if err != nil || !strings.Contains(out, "frag-one-pod") {
		t.Fatalf("plan: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "plan.jsonl")); err != nil {
		t.Fatalf("no decision log: %v", err)
	}
	data, err := os.ReadFile(plan)
	if err != nil {
		t.Fatal(err)
	}
	var p defrag.Plan
	if err := json.Unmarshal(data, &p); err != nil {
		t.Fatal(err)
	}
	if p.Schema != defrag.PlanSchema || p.Budget != 20 || p.Samples != 2 || len(p.Steps) == 0 || len(p.Steps) > 20 ||
		p.After.FragGPU >= p.Before.FragGPU {
		t.Fatalf("plan: %d steps, budget %d, samples %d, fragment %.1f -> %.1f", len(p.Steps), p.Budget, p.Samples, p.Before.FragGPU, p.After.FragGPU)
	}

	// Bad input: an error naming the entry, and no plan written.
	var s map[string]any
	raw, _ := os.ReadFile(snap)
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	s["running"].([]any)[2].(map[string]any)["node"] = "no-such-node"
	bad := filepath.Join(dir, "bad.json")
	raw, _ = json.Marshal(s)
	if err := os.WriteFile(bad, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	badPlan := filepath.Join(dir, "bad-plan.json")
	_, err = defragCLI(t, "plan", "--snapshot", bad, "--policy", "greedy", "--budget", "5", "--samples", "1", "--out", badPlan)
	if err == nil || !strings.Contains(err.Error(), `running[2]`) || !strings.Contains(err.Error(), `"no-such-node" does not exist`) {
		t.Fatalf("bad snapshot: %v", err)
	}
	if _, err := os.Stat(badPlan); !os.IsNotExist(err) {
		t.Fatalf("a plan was written for a bad snapshot: %v", err)
	}
	_, err = defragCLI(t, "plan", "--snapshot", snap, "--policy", "nope", "--budget", "5", "--samples", "1", "--out", badPlan)
	if err == nil || !strings.Contains(err.Error(), "greedy") {
		t.Fatalf("unknown method: %v", err)
	}
}
