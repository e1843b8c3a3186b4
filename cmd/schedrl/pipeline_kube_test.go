package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedrl/schedrl/internal/checkpoint"
	"github.com/schedrl/schedrl/internal/testserver"
	"github.com/schedrl/schedrl/pipeline"
)

// TestPipelineKubernetesExecutor runs the smoke pipeline (configs/smoke.yaml, every stage)
// with the local executor, then at the same path with the kubernetes executor on the shared
// node (the expert logs and the eval stage as Indexed Jobs, eval's pods reading the two
// checkpoints the stage ships to the store): every stage key, output hash and checkpoint's
// model.ot sha256 is the local run's. A second kubernetes run skips every stage and starts
// no Job.
func TestPipelineKubernetesExecutor(t *testing.T) {
	c := executorNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	root := t.TempDir()
	dir := filepath.Join(root, "pipeline")
	// Both runs publish to the same store (the publish key names it), emptied between them so
	// that neither finds the other's champion.
	const bucket = "pipeline"
	if err := c.minio.MakeBucket(bucket); err != nil {
		t.Fatal(err)
	}
	env := append(c.driverEnv(), "SCHEDRL_REGISTRY_STORE=s3://"+bucket+"/smoke",
		"SCHEDRL_REGISTRY_S3_ENDPOINT="+c.minio.Endpoint, "SCHEDRL_REGISTRY_TRACKING_URI=")
	kubernetes := c.kubernetesFlags()
	run := func(what string, env []string, args ...string) (*pipeline.Record, string) {
		t.Helper()
		var out bytes.Buffer
		cmd := cli(t, dir, env, args...)
		cmd.Stdout, cmd.Stderr = &out, &out
		start := time.Now()
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s pipeline run: %v\n%s", what, err, out.String())
		}
		rec, err := pipeline.LoadRecord(dir, "")
		if err != nil {
			t.Fatal(err)
		}
		var stages []string
		for _, s := range rec.Stages {
			stages = append(stages, fmt.Sprintf("%s %.1f s", s.Name, s.Seconds))
		}
		t.Logf("%s pipeline run: %.1f s (%s)", what, time.Since(start).Seconds(), strings.Join(stages, ", "))
		return rec, out.String()
	}
	type outcome struct{ keys, hashes, weights map[string]string }
	read := func(rec *pipeline.Record, status string) outcome {
		t.Helper()
		o := outcome{map[string]string{}, map[string]string{}, map[string]string{}}
		for _, s := range rec.Stages {
			if s.Status != status || s.Output == nil {
				t.Fatalf("run %s: stage %s: %s, want %s", rec.RunID, s.Name, s.Status, status)
			}
			o.keys[s.Name], o.hashes[s.Name] = s.Key, s.Output.Hash
		}
		err := filepath.WalkDir(filepath.Join(dir, "stages"), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.Name() != checkpoint.ModelFile {
				return err
			}
			data, err := os.ReadFile(path)
			sum := sha256.Sum256(data)
			o.weights[strings.TrimPrefix(path, dir)] = hex.EncodeToString(sum[:])
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(o.weights) < 2 {
			t.Fatalf("checkpoints %v: want pretrain's and finetune's model.ot at least", o.weights)
		}
		return o
	}

	local, _ := run("local", env)
	want := read(local, pipeline.StatusDone)
	if err := os.Rename(dir, dir+"-local"); err != nil {
		t.Fatal(err)
	}
	emptyBucket(ctx, t, c.minio, bucket)

	before := map[string]map[string]bool{}
	for _, work := range []string{"logs", "eval"} {
		before[work] = jobNames(ctx, t, c.client, work)
	}
	remote, out := run("kubernetes", env, kubernetes...)
	got := read(remote, pipeline.StatusDone)
	for _, m := range []struct {
		name      string
		got, want map[string]string
	}{{"stage key", got.keys, want.keys}, {"output hash", got.hashes, want.hashes}, {"model.ot sha256", got.weights, want.weights}} {
		if !maps.Equal(m.got, m.want) {
			t.Errorf("%s, kubernetes executor %v, local %v", m.name, m.got, m.want)
		}
		t.Logf("%s: %v", m.name, m.got)
	}
	for _, work := range []string{"logs", "eval"} {
		jobs := newJobs(ctx, t, c.client, work, before[work])
		if len(jobs) != 1 {
			t.Fatalf("%s jobs of the kubernetes run: %v, want one\n%s", work, jobs, out)
		}
		j, err := c.client.BatchV1().Jobs("default").Get(ctx, jobs[0], metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if j.Status.Succeeded != *j.Spec.Completions || j.Status.Succeeded < 2 {
			t.Errorf("%s job %s: %d of %d shards succeeded, want all of 2 or more", work, j.Name, j.Status.Succeeded, *j.Spec.Completions)
		}
		t.Logf("%s job %s: %d shards succeeded", work, j.Name, j.Status.Succeeded)
	}
	if !strings.Contains(out, "checkpoint shipped") {
		t.Errorf("the eval stage did not ship its checkpoints:\n%s", out)
	}

	again, _ := run("kubernetes, again", env, kubernetes...)
	read(again, pipeline.StatusCached)
	for _, work := range []string{"logs", "eval"} {
		if jobs := newJobs(ctx, t, c.client, work, before[work]); len(jobs) != 1 {
			t.Errorf("the cached rerun started %s jobs: %v", work, jobs)
		}
	}
}

// emptyBucket deletes every object of bucket.
func emptyBucket(ctx context.Context, t *testing.T, m *testserver.MinIO, bucket string) {
	t.Helper()
	client, err := m.Client()
	if err != nil {
		t.Fatal(err)
	}
	for obj := range client.ListObjects(ctx, bucket, minio.ListObjectsOptions{Recursive: true}) {
		if obj.Err != nil {
			t.Fatal(obj.Err)
		}
		if err := client.RemoveObject(ctx, bucket, obj.Key, minio.RemoveObjectOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}
