package main

import (
	"bytes"
	"context"
	"maps"
	"os"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedrl/schedrl/pipeline"
)

// TestFamilyLogsKubernetesExecutor runs the logs stage of other families' smoke pipelines with
// the local executor, then at the same path with the kubernetes executor on the shared node
// (one Indexed Job of two shards or more, the logs back through the store by sha256): the
// stage key, its output hash and every log's sha256 are the local run's.
func TestFamilyLogsKubernetesExecutor(t *testing.T) {
	c := executorNode(t)
	const bucket = "family-logs"
	if err := c.minio.MakeBucket(bucket); err != nil {
		t.Fatal(err)
	}
	for _, fam := range []struct {
		name, config string
		sets         []string
	}{
		// Two training timelines, so two units.
		{"defrag-online", "configs/defrag-online-smoke.yaml", []string{"--set", "pipeline.log_seeds=1000-1001"}},
		// One workload at a training and a validation seed: two runs.
		{"maifs", "configs/maifs-smoke.yaml", nil},
	} {
		t.Run(fam.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
			defer cancel()
			dir := filepath.Join(t.TempDir(), "pipeline")
			env := append(c.driverEnv(), "SCHEDRL_REGISTRY_STORE=s3://"+bucket+"/"+fam.name,
				"SCHEDRL_REGISTRY_S3_ENDPOINT="+c.minio.Endpoint, "SCHEDRL_REGISTRY_TRACKING_URI=")
			args := append([]string{"--set", "pipeline.stages=logs"}, fam.sets...)
			run := func(what string, more ...string) (pipeline.StageRecord, map[string]string, string) {
				t.Helper()
				var out bytes.Buffer
				cmd := cliConfig(t, fam.config, dir, env, append(args, more...)...)
				cmd.Stdout, cmd.Stderr = &out, &out
				start := time.Now()
				if err := cmd.Run(); err != nil {
					t.Fatalf("%s run: %v\n%s", what, err, out.String())
				}
				rec, err := pipeline.LoadRecord(dir, "")
				if err != nil {
					t.Fatal(err)
				}
				s := rec.Stages[0]
				if s.Status != pipeline.StatusDone || s.Output == nil {
					t.Fatalf("%s run: logs stage %s\n%s", what, s.Status, out.String())
				}
				logs, err := filepath.Glob(filepath.Join(s.Output.Dir, "*.jsonl"))
				if err != nil || len(logs) < 2 {
					t.Fatalf("%s run: logs %v (%v)", what, logs, err)
				}
				sums := map[string]string{}
				for _, l := range logs {
					if sums[filepath.Base(l)], err = pipeline.HashFile(l); err != nil {
						t.Fatal(err)
					}
				}
				t.Logf("%s run: %.1f s, logs stage %.1f s, %d logs, metric %+v, output hash %s", what, time.Since(start).Seconds(),
					s.Seconds, len(logs), s.Metric, s.Output.Hash)
				return s, sums, out.String()
			}
			local, localLogs, _ := run("local")
			if err := os.Rename(dir, dir+"-local"); err != nil {
				t.Fatal(err)
			}
			before := jobNames(ctx, t, c.client, "logs")
			remote, remoteLogs, out := run("kubernetes", c.kubernetesFlags()...)
			if remote.Key != local.Key || remote.Output.Hash != local.Output.Hash || !maps.Equal(remoteLogs, localLogs) {
				t.Errorf("kubernetes executor: key %s, output hash %s, logs %v\nlocal: key %s, output hash %s, logs %v",
					remote.Key, remote.Output.Hash, remoteLogs, local.Key, local.Output.Hash, localLogs)
			}
			jobs := newJobs(ctx, t, c.client, "logs", before)
			if len(jobs) != 1 {
				t.Fatalf("logs jobs of the kubernetes run: %v, want one\n%s", jobs, out)
			}
			j, err := c.client.BatchV1().Jobs("default").Get(ctx, jobs[0], metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if j.Status.Succeeded != *j.Spec.Completions || j.Status.Succeeded < 2 {
				t.Errorf("logs job %s: %d of %d shards succeeded, want all of 2 or more", j.Name, j.Status.Succeeded, *j.Spec.Completions)
			}
			t.Logf("logs job %s: %d shards succeeded", j.Name, j.Status.Succeeded)
		})
	}
}
