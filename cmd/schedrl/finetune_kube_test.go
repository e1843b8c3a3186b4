package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestFinetuneRolloutWorkersKubernetes: on a real node, `schedrl finetune` with
// finetune.rollout_workers 4 and the kubernetes executor (an Indexed Job of schedrl's image,
// the pods meeting the learner in MinIO over the pod network) ends with the model.ot bytes of
// the same run with the local executor, with one rollout pod deleted mid-way and retried. The
// node is the one this process's executor tests share.
func TestFinetuneRolloutWorkersKubernetes(t *testing.T) {
	c := executorNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	minio, client, kubeconfig, ref := c.minio, c.client, c.kubeconfig, executorImage
	dir := t.TempDir()
	config := func(kind string) string {
		path := filepath.Join(dir, kind+".yaml")
		yaml := fmt.Sprintf(`seed: 5
device: {name: cpu, threads: 1}
registry:
  store: s3://parts/schedrl
  s3: {endpoint: %q}
pipeline:
  executor:
    kind: %s
    kubeconfig: %q
    image: %q
    retries: 2
    timeout: 10m
    secret: store
    resources: {cpu: 100m, memory: 1Gi}
finetune:
  from: none
  cluster_sizes: [24, 32]
  num_envs: 4
  rollout_steps: 16
  rollout_workers: 4
  workers: 1
  total_steps: 192
  epochs: 1
  minibatches: 2
  eval_seeds: "49"
  eval_cluster_size: 24
`, minio.Endpoint, kind, kubeconfig, ref)
		if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	env := c.driverEnv()
	model := func(kind string) []byte {
		out := filepath.Join(dir, kind)
		p := runSchedrl(t, env, "finetune", "--config", config(kind), "--out", out)
		t.Logf("%s: %s", kind, strings.TrimSpace(p.stdout.String()))
		data, err := os.ReadFile(filepath.Join(out, "model.ot"))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	local := model("local")
	deleted := make(chan string, 1)
	go deleteOneRunningPod(ctx, client, "rollout", deleted)
	if !bytes.Equal(local, model("kubernetes")) {
		t.Error("model.ot of 4 rollout workers on the kubernetes executor differs from the local executor's")
	}
	select {
	case pod := <-deleted:
		t.Logf("deleted rollout pod %s mid-way", pod)
	default:
		t.Error("no rollout pod was seen running, so none was deleted")
	}

	// On request, the throughput of docs/results/2026-12-06-rollout-workers.md: the default
	// rollout shape (8 copies of 256- and 512-node episodes, 128 steps) in one process, and
	// on 4 workers of either executor. Logged, not asserted.
	steps := os.Getenv("BENCH_ROLLOUT_STEPS")
	if steps == "" {
		return
	}
	for _, run := range []struct{ kind, workers string }{{"local", "0"}, {"local", "4"}, {"kubernetes", "4"}} {
		out := filepath.Join(dir, "bench-"+run.kind+"-"+run.workers)
		runSchedrl(t, env, "finetune", "--config", config(run.kind), "--out", out, "--set", "finetune.rollout_workers="+run.workers,
			"--set", "finetune.num_envs=8", "--set", "finetune.rollout_steps=128", "--set", "finetune.cluster_sizes=[256, 512]",
			"--set", "finetune.epochs=2", "--set", "finetune.minibatches=4", "--set", "finetune.eval_cluster_size=256",
			"--set", "finetune.total_steps="+steps)
		data, err := os.ReadFile(filepath.Join(out, "metrics.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		var lines []string
		for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var r struct {
				Total   float64 `json:"env_steps_per_s"`
				Rollout float64 `json:"rollout_env_steps_per_s"`
			}
			if err := json.Unmarshal([]byte(l), &r); err != nil {
				t.Fatal(err)
			}
			lines = append(lines, fmt.Sprintf("%.0f/%.0f", r.Total, r.Rollout))
		}
		t.Logf("bench %s executor, rollout_workers %s: env steps/s per update (whole update / rollout alone): %s; load %s",
			run.kind, run.workers, strings.Join(lines, " "), loadavg())
	}
}

// loadavg is the machine's 1-, 5- and 15-minute load averages.
func loadavg() string {
	data, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(data))
	return strings.Join(f[:min(3, len(f))], " ")
}
