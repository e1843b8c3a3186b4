package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
