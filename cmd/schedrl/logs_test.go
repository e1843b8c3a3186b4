package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/schedrl/schedrl/internal/repotest"
	"github.com/schedrl/schedrl/kube"
	"github.com/schedrl/schedrl/kube/podlog"
	"github.com/schedrl/schedrl/sim"
)

// dumpJSON is a one-node dump with pod a bound to node (and b waiting), as kubectl writes it.
func dumpJSON(node string) string {
	return `{"apiVersion":"v1","kind":"List","items":[
{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1","labels":{"alibabacloud.com/gpu-card-model":"V100"}},
 "status":{"allocatable":{"cpu":"64","memory":"256Gi","nvidia.com/gpu":"8"}}},
{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a","namespace":"default","uid":"u-a","creationTimestamp":"2026-12-01T10:00:00Z"},
 "spec":{"nodeName":"` + node + `","containers":[{"name":"main","resources":{"requests":{"cpu":"1","memory":"1Gi"},"limits":{"nvidia.com/gpu":"2"}}}]},
 "status":{"conditions":[{"type":"PodScheduled","status":"True","lastTransitionTime":"2026-12-01T10:00:02Z"}]}},
{"apiVersion":"v1","kind":"Pod","metadata":{"name":"b","namespace":"default","uid":"u-b","creationTimestamp":"2026-12-01T10:00:01Z"},
 "spec":{"containers":[{"name":"main","resources":{"requests":{"cpu":"1","memory":"1Gi"}}}]}}]}`
}

// TestLogsImport: a dump becomes a log and a report; a pod bound to a node no dump lists is an
// error naming it, and no log is left behind.
func TestLogsImport(t *testing.T) {
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good.json"), filepath.Join(dir, "bad.json")
	os.WriteFile(good, []byte(dumpJSON("n1")), 0o644)
	os.WriteFile(bad, []byte(dumpJSON("n9")), 0o644)
	var out bytes.Buffer
	log := filepath.Join(dir, "cluster.jsonl")
	if err := runLogsImport(context.Background(), &logsImportOptions{Dumps: []string{good}, Out: log, Coverage: 0.95, Stdout: &out}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(log)
	if err != nil || !strings.Contains(string(data), `"type":"bind","time":2,"task":"default/a","node":"n1","gpus":[0,1]`) {
		t.Fatalf("log %s (%v)", data, err)
	}
	if !strings.Contains(out.String(), "2 pods: 1 bound (1 with GPUs assigned by the tightest-fit rule), 0 completed, 0 deleted, 1 waiting") {
		t.Errorf("report: %s", out.String())
	}
	bl := filepath.Join(dir, "bad.jsonl")
	err = runLogsImport(context.Background(), &logsImportOptions{Dumps: []string{bad}, Out: bl, Coverage: 0.95, Stdout: &out})
	if err == nil || !strings.Contains(err.Error(), "pod default/a: bound to node n9, which no dump lists") {
		t.Fatalf("error %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*bad.jsonl*")); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
	if err := runLogsImport(context.Background(), &logsImportOptions{Dumps: []string{good}, Kubeconfig: "k", Out: bl}); err == nil {
		t.Error("--dump with --kubeconfig accepted")
	}
}

// TestLogsImportOpenbLists is docs/deploy.md's path from a cluster's history to the workload
// fine-tuning and eval resample: `logs import --pods --nodes` on the pipeline test's dump
// writes lists the simulator's readers accept, with a row per imported pod and the dump's
// totals, and sim, eval (arrival and timed), and finetune run on them through --set.
func TestLogsImportOpenbLists(t *testing.T) {
	t.Chdir(repotest.Root()) // configs/smoke.yaml and the sections' default tables
	dir := t.TempDir()
	dump := filepath.Join(dir, "cluster.json")
	packedDump(t, dump, 0)
	pods, nodes := filepath.Join(dir, "pods.csv"), filepath.Join(dir, "nodes.csv")
	code, out := inProcess(t, "logs", "import", "--dump", dump, "--out", filepath.Join(dir, "cluster.jsonl"), "--pods", pods, "--nodes", nodes)
	if code != 0 || !strings.Contains(out, "openb lists: pods "+pods+", nodes "+nodes+", 40 pods, 6 nodes") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"--pods", filepath.Join(dir, "no", "pods.csv")}, "--pods " + filepath.Join(dir, "no", "pods.csv") + ": folder " + filepath.Join(dir, "no") + " does not exist"},
		{[]string{"--pods", filepath.Join(dir, "bad.jsonl")}, "--pods " + filepath.Join(dir, "bad.jsonl") + ": the same file as --out"},
	} {
		code, out := inProcess(t, append([]string{"logs", "import", "--dump", dump, "--out", filepath.Join(dir, "bad.jsonl")}, bad.args...)...)
		if left, _ := filepath.Glob(filepath.Join(dir, "*bad*")); code == 0 || !strings.Contains(out, bad.want) || len(left) != 0 {
			t.Errorf("%v: exit %d, left %v:\n%s", bad.args, code, left, out)
		}
	}
	snap, err := podlog.ReadDump(dump)
	if err != nil {
		t.Fatal(err)
	}
	var want, got struct{ cpu, mem, gpuMilli, bound int64 }
	for i := range snap.Pods {
		task, err := kube.TaskOf(&snap.Pods[i])
		if err != nil {
			t.Fatal(err)
		}
		want.cpu, want.mem, want.gpuMilli = want.cpu+task.CPU, want.mem+task.Mem, want.gpuMilli+int64(task.NumGPU)*task.GPUMilli
		if snap.Pods[i].Spec.NodeName != "" {
			want.bound++
		}
	}
	tasks, err := sim.LoadTasks(pods)
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		got.cpu, got.mem, got.gpuMilli = got.cpu+task.CPU, got.mem+task.Mem, got.gpuMilli+int64(task.NumGPU)*task.GPUMilli
		if task.Scheduled >= 0 {
			got.bound++
		}
	}
	if len(tasks) != len(snap.Pods) || got != want {
		t.Errorf("pod list: %d rows, totals %+v; dump: %d pods, %+v", len(tasks), got, len(snap.Pods), want)
	}
	if n, err := sim.LoadNodes(nodes); err != nil || len(n) != len(snap.Nodes) {
		t.Errorf("node list: %d nodes (%v), dump %d", len(n), err, len(snap.Nodes))
	}
	lists := []string{"--set", "sim.pods=" + pods, "--set", "sim.nodes=" + nodes}
	if code, out := inProcess(t, append([]string{"sim", "--policy", "fgd", "--seed", "1"}, lists...)...); code != 0 || !strings.Contains(out, "fgd seed 1:") {
		t.Errorf("sim: exit %d:\n%s", code, out)
	}
	eval := []string{"eval", "--set", "eval.traces=" + pods, "--set", "eval.nodes=" + nodes, "--set", "eval.seeds=49"}
	for _, extra := range [][]string{
		{"--set", "eval.policies=bestfit,fgd", "--set", "eval.paper_overlay=false", "--set", "eval.out=" + filepath.Join(dir, "eval")},
		{"--set", "eval.policies=fgd", "--set", "eval.timed.kind=tasks", "--set", "eval.timed.load=0.5", "--set", "eval.timed.tasks=60",
			"--set", "eval.timed.warmup=0", "--set", "eval.out=" + filepath.Join(dir, "eval-timed")},
	} {
		if code, out := inProcess(t, append(slices.Clone(eval), extra...)...); code != 0 || !strings.Contains(out, "report: ") {
			t.Errorf("%v: exit %d:\n%s", extra, code, out)
		}
	}
	ft := filepath.Join(dir, "ft")
	code, out = inProcess(t, "finetune", "--config", "configs/smoke.yaml", "--set", "finetune.from=none", "--set", "finetune.traces="+pods,
		"--set", "finetune.nodes="+nodes, "--set", "finetune.cluster_sizes=0", "--set", "finetune.eval_cluster_size=0",
		"--set", "finetune.total_steps=64", "--set", "finetune.rollout_steps=16", "--set", "finetune.num_envs=2", "--set", "finetune.out="+ft)
	if code != 0 || !strings.Contains(out, "fine-tuned "+ft) {
		t.Errorf("finetune: exit %d:\n%s", code, out)
	}
}
