package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/schedrl/schedrl/internal/checkpoint"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/internal/testserver"
	"github.com/schedrl/schedrl/kube/podlog"
	"github.com/schedrl/schedrl/pipeline"
	"github.com/schedrl/schedrl/pipeline/stages"
	"github.com/schedrl/schedrl/registry"
)

// packedDump is a `kubectl get nodes,pods -o json` of a cluster whose scheduler packs pods
// first-fit by whole GPUs (nvidia.com/gpu, no GPU indices recorded, as with the default
// scheduler and the NVIDIA device plugin); seed varies the pods' sizes.
func packedDump(t *testing.T, path string, seed int) {
	t.Helper()
	const nodes, gpus = 6, 8
	var items []any
	free := make([]int, nodes)
	for n := range nodes {
		free[n] = gpus
		items = append(items, map[string]any{"apiVersion": "v1", "kind": "Node",
			"metadata": map[string]any{"name": fmt.Sprintf("n%d", n), "labels": map[string]string{"alibabacloud.com/gpu-card-model": "V100"}},
			"status":   map[string]any{"allocatable": map[string]string{"cpu": "96", "memory": "512Gi", "nvidia.com/gpu": fmt.Sprint(gpus)}}})
	}
	sizes := []int{1, 2, 4, 1, 8, 2, 1, 1}
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for i := range 40 {
		want := sizes[(i+seed)%len(sizes)]
		node := ""
		for n := range nodes {
			if free[n] >= want {
				free[n] -= want
				node = fmt.Sprintf("n%d", n)
				break
			}
		}
		created := start.Add(time.Duration(i) * 10 * time.Second)
		pod := map[string]any{"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": fmt.Sprintf("p%d", i), "namespace": "default", "uid": fmt.Sprintf("u%d-%d", seed, i),
				"creationTimestamp": created.Format(time.RFC3339)},
			"spec": map[string]any{"nodeName": node, "containers": []any{map[string]any{"name": "main", "resources": map[string]any{
				"requests": map[string]string{"cpu": "2", "memory": "8Gi"}, "limits": map[string]string{"nvidia.com/gpu": fmt.Sprint(want)}}}}}}
		if node != "" {
			pod["status"] = map[string]any{"conditions": []any{map[string]any{"type": "PodScheduled", "status": "True",
				"lastTransitionTime": created.Add(time.Second).Format(time.RFC3339)}}}
		}
		items = append(items, pod)
	}
	data, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestKubeSmokePipelineFromImportedLogs is the path of docs/deploy.md from "we run
// kube-scheduler" to a trained policy: two clusters' dumps through `schedrl logs import`, the
// logs uploaded to a store prefix (a real MinIO), and `schedrl pipeline run --config
// configs/kube-smoke.yaml` with pipeline.logs.source set to the prefix: behaviour cloning on
// the imported decisions gives a checkpoint and its validation agreement.
func TestKubeSmokePipelineFromImportedLogs(t *testing.T) {
	if testing.Short() {
		t.Skip("runs behaviour cloning")
	}
	minio, err := testserver.StartMinIO()
	if err != nil {
		t.Fatal(err)
	}
	defer minio.Close()
	if err := minio.MakeBucket("kubelogs"); err != nil {
		t.Fatal(err)
	}
	s3 := config.Default().Registry.S3
	s3.Endpoint, s3.AccessKey, s3.SecretKey = minio.Endpoint, minio.AccessKey, minio.SecretKey
	store, err := registry.OpenBackend(config.RegistryConfig{Store: "s3://kubelogs/cluster", S3: s3})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ctx := context.Background()
	for i := range 2 {
		dump, log := filepath.Join(dir, fmt.Sprintf("day%d.json", i)), filepath.Join(dir, fmt.Sprintf("cluster%d.jsonl", i))
		packedDump(t, dump, i)
		var out bytes.Buffer
		if err := runLogsImport(ctx, &logsImportOptions{Dumps: []string{dump}, Out: log, Coverage: 0.95, Stdout: &out}); err != nil {
			t.Fatalf("logs import: %v\n%s", err, out.String())
		}
		data, err := os.ReadFile(log)
		if err != nil {
			t.Fatal(err)
		}
		if err := store.Put(ctx, filepath.Base(log), bytes.NewReader(data), int64(len(data))); err != nil {
			t.Fatal(err)
		}
	}

	runDir := t.TempDir()
	rec := runCLIConfig(t, "configs/kube-smoke.yaml", runDir, []string{
		"SCHEDRL_PIPELINE_LOGS_SOURCE=s3://kubelogs/cluster",
		"SCHEDRL_REGISTRY_S3_ENDPOINT=" + minio.Endpoint,
		"SCHEDRL_REGISTRY_S3_ACCESS_KEY=" + minio.AccessKey,
		"SCHEDRL_REGISTRY_S3_SECRET_KEY=" + minio.SecretKey,
	})
	if rec.Status != pipeline.RunOK {
		t.Fatalf("run %s: %s", rec.RunID, rec.Status)
	}
	for _, name := range []string{"logs", "datasets", "pretrain"} {
		if s := stageOf(t, rec, name); s.Status != pipeline.StatusDone {
			t.Errorf("stage %s: %s", name, s.Status)
		}
	}
	if m := stageOf(t, rec, "logs").Metric; m == nil || m.Value != 2 {
		t.Errorf("logs stage metric %+v, want the 2 imported logs", m)
	}
	pre := stageOf(t, rec, "pretrain")
	if _, err := os.Stat(filepath.Join(pre.Output.Dir, "final", checkpoint.ManifestFile)); err != nil {
		if _, err := os.Stat(filepath.Join(pre.Output.Dir, checkpoint.ManifestFile)); err != nil {
			t.Errorf("pretrain wrote no checkpoint: %v", err)
		}
	}
	if m := pre.Metric; m == nil || m.Name != "val_agreement" || m.Value <= 0 {
		t.Errorf("pretrain metric %+v, want a validation agreement", m)
	}
	t.Logf("validation agreement with the imported scheduler: %+v", pre.Metric)
}

// checkStoreSource: the pipeline's logs stage with pipeline.logs.source set to src (where an
// extender uploaded its closed logs) downloads exactly the logs named, each of which replays.
func checkStoreSource(t *testing.T, cfg config.Config, src string, names []string) {
	t.Helper()
	cfg.Pipeline.Logs.Source, cfg.Datasets.Logs = src, ""
	cfg.Pipeline.Stages, cfg.Pipeline.Dir = []string{"logs"}, t.TempDir()
	p, err := stages.Build(cfg, stages.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := p.Run(context.Background(), pipeline.Options{Dir: cfg.Pipeline.Dir, CodeRevision: "test", Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatalf("logs stage from %s: %v", src, err)
	}
	out := stageOf(t, rec, "logs").Output.Dir
	got, _ := filepath.Glob(filepath.Join(out, "*"))
	for i := range got {
		got[i] = filepath.Base(got[i])
	}
	if strings.Join(got, ",") != strings.Join(names, ",") {
		t.Fatalf("logs stage from %s wrote %v, want %v", src, got, names)
	}
	for _, name := range names {
		f, err := os.Open(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		err = podlog.Replay(f)
		f.Close()
		if err != nil {
			t.Errorf("downloaded %s: %v", name, err)
		}
	}
}
