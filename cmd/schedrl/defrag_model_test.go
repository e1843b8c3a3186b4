package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedrl/schedrl/defrag"
)

// schedrl runs the test binary as the schedrl command in the repository root (a real process,
// so no flag state carries over between commands).
func schedrl(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := execSchedrl(&out, &out, args...)
	return out.String(), err
}

// schedrlJSON runs schedrl as schedrl does and decodes its stdout into v; progress and logs go
// to stderr, which is returned after the output for the failure message.
func schedrlJSON(t *testing.T, v any, args ...string) (string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := execSchedrl(&stdout, &stderr, args...)
	if err == nil {
		err = json.Unmarshal(stdout.Bytes(), v)
	}
	return stdout.String() + stderr.String(), err
}

func execSchedrl(stdout, stderr io.Writer, args ...string) error {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "SCHEDRL_TEST_AS_CLI=1")
	cmd.Stdout, cmd.Stderr = stdout, stderr
	return cmd.Run()
}

// TestDefragBehaviourCloningEndToEnd: greedy migration logs of training seeds (defrag demos),
// a defrag dataset of them, a few behaviour-cloning steps, then plans from the checkpoint
// (greedy decoding and samples) on a held-out state; a placement checkpoint is refused.
func TestDefragBehaviourCloningEndToEnd(t *testing.T) {
	dir := t.TempDir()
	logs, ds, ckpt := filepath.Join(dir, "logs"), filepath.Join(dir, "ds"), filepath.Join(dir, "bc")
	set := []string{"--config", "configs/smoke.yaml", "--set", "defrag.budget=4"}
	steps := [][]string{
		{"defrag", "demos", "--seeds", "1000-1002", "--out", logs},
		{"datasets", "build", "--env", "defrag", "--logs", filepath.Join(logs, "*.jsonl"), "--out", ds, "--val-fraction", "0.34"},
		{"pretrain", "--data", ds, "--out", ckpt, "--set", "pretrain.max_steps=4", "--set", "pretrain.batch_size=4",
			"--set", "pretrain.warmup_steps=1", "--set", "pretrain.val_max_samples=4"},
	}
	for _, args := range steps {
		if out, err := schedrl(t, append(args, set...)...); err != nil {
			t.Fatalf("schedrl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	out, err := schedrl(t, "datasets", "inspect", ds, "--json")
	if err != nil || !strings.Contains(out, `"env": "defrag"`) {
		t.Fatalf("inspect: %v\n%s", err, out)
	}
	snap, plan := filepath.Join(dir, "snap.json"), filepath.Join(dir, "plan.json")
	if out, err := schedrl(t, append([]string{"defrag", "snapshot", "--policy", "fgd", "--seed", "49", "--out", snap}, set...)...); err != nil {
		t.Fatalf("snapshot: %v\n%s", err, out)
	}
	out, err = schedrl(t, append([]string{"defrag", "plan", "--snapshot", snap, "--model", ckpt, "--samples", "3", "--out", plan}, set...)...)
	if err != nil || !strings.Contains(out, "model:") {
		t.Fatalf("plan --model: %v\n%s", err, out)
	}
	data, err := os.ReadFile(plan)
	if err != nil {
		t.Fatal(err)
	}
	var p defrag.Plan
	if err := json.Unmarshal(data, &p); err != nil {
		t.Fatal(err)
	}
	if p.Method != "model" || p.Samples != 3 || p.Budget != 4 || len(p.Steps) > 4 {
		t.Fatalf("plan: method %s, %d samples, budget %d, %d steps", p.Method, p.Samples, p.Budget, len(p.Steps))
	}

	// The checkpoint also plans in the running cluster, at each invocation of defrag online.
	var online defragOnlineSummary
	out, err = schedrlJSON(t, &online, "defrag", "online", "--pods", "data/openb/openb_pod_list_default.csv", "--load", "1.1", "--seed", "3",
		"--duration", "7200", "--warmup", "3600", "--cap", "3600", "--every", "600", "--head-wait", "60", "--budget", "4", "--model", ckpt, "--json")
	if err != nil || online.Method != "model:"+ckpt || online.Invocations == 0 ||
		online.Migrations > 4*online.Invocations {
		t.Fatalf("defrag online --model: %v\n%s", err, out)
	}
	// And as MODEL@ALIAS, resolved through the registry.
	store := "--store=file://" + filepath.Join(dir, "registry")
	for _, args := range [][]string{{"registry", "publish", ckpt, "--model", "defrag", store}, {"registry", "promote", "defrag@1", "--alias", "champion", store}} {
		if out, err := schedrl(t, args...); err != nil {
			t.Fatalf("schedrl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	var byAlias defragOnlineSummary
	out, err = schedrlJSON(t, &byAlias, "defrag", "online", "--pods", "data/openb/openb_pod_list_default.csv", "--load", "1.1", "--seed", "3",
		"--duration", "7200", "--warmup", "3600", "--cap", "3600", "--every", "600", "--head-wait", "60", "--budget", "4",
		"--model", "defrag@champion", store, "--json")
	if err != nil || byAlias.Method != "model:defrag@champion" || byAlias.Invocations == 0 {
		t.Fatalf("defrag online --model defrag@champion: %v\n%s", err, out)
	}

	// The placement checkpoint of pretrain's smoke run cannot plan migrations.
	pds, pckpt := filepath.Join(dir, "pds"), filepath.Join(dir, "pbc")
	if out, err := schedrl(t, "sim", "--config", "configs/smoke.yaml", "--policy", "fgd", "--seeds", "42", "--log-dir", filepath.Join(dir, "plogs")); err != nil {
		t.Fatalf("sim: %v\n%s", err, out)
	}
	for _, args := range [][]string{
		{"datasets", "build", "--logs", filepath.Join(dir, "plogs", "*.jsonl"), "--out", pds, "--val-fraction", "0"},
		{"pretrain", "--data", pds, "--val-dataset", pds, "--out", pckpt, "--set", "pretrain.max_steps=2", "--set", "pretrain.batch_size=2", "--set", "pretrain.val_max_samples=2"},
	} {
		if out, err := schedrl(t, append(args, "--config", "configs/smoke.yaml")...); err != nil {
			t.Fatalf("schedrl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	out, err = schedrl(t, append([]string{"defrag", "plan", "--snapshot", snap, "--model", pckpt, "--out", filepath.Join(dir, "p2.json")}, set...)...)
	if err == nil || !strings.Contains(out, "a placement network") {
		t.Fatalf("placement checkpoint planned migrations: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "p2.json")); !os.IsNotExist(err) {
		t.Fatalf("a plan was written for a refused checkpoint: %v", err)
	}
}
