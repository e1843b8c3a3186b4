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

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/schedrl/schedrl/eval"
)

// metricsWithoutTimings is metrics.json less what two runs of one config differ in: the wall
// clock and the decision latencies, which measure the machine.
func metricsWithoutTimings(t *testing.T, path string) []byte {
	t.Helper()
	m, err := eval.ReadMetrics(path)
	if err != nil {
		t.Fatal(err)
	}
	m.WallSeconds = 0
	for i := range m.Results {
		r := &m.Results[i]
		r.LatencyP50Us, r.LatencyP99Us = eval.Summary{}, eval.Summary{}
		for s := range r.PerSeed {
			r.PerSeed[s].WallSeconds, r.PerSeed[s].LatencyP50Us, r.PerSeed[s].LatencyP99Us = 0, 0, 0
		}
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestEvalKubernetesExecutor: on a real node, `schedrl eval` with the kubernetes executor
// (an Indexed Job of schedrl's image, 4 pods at a time, writing their parts to MinIO over the
// pod network) gives the local run's metrics.json (less timings) and curves.csv byte for byte,
// with a pod deleted mid-way retried; a timed world (--timed jobs) likewise; a shard that
// cannot store its part fails the Job, and
// the error names the shard and quotes its log. The node is the one this process's executor
// tests share.
func TestEvalKubernetesExecutor(t *testing.T) {
	c := executorNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	minio, client, kubeconfig, ref := c.minio, c.client, c.kubeconfig, executorImage
	if err := c.secret(ctx, "wrong-store", "nobody", "wrong-secret"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	config := func(secret string, shards, retries int) string {
		path := filepath.Join(dir, secret+".yaml")
		yaml := fmt.Sprintf(`registry:
  store: s3://parts/schedrl
  s3: {endpoint: %q}
pipeline:
  executor:
    kind: kubernetes
    kubeconfig: %q
    image: %q
    parallelism: 4
    shards: %d
    retries: %d
    timeout: 10m
    secret: %s
    resources: {cpu: 100m, memory: 1Gi}
`, minio.Endpoint, kubeconfig, ref, shards, retries, secret)
		if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	env := c.driverEnv()
	sweep := []string{"eval", "--policies", "fgd,bestfit,random", "--traces", "default,gpushare60", "--seeds", "49-60"}

	local := filepath.Join(dir, "local")
	l := runSchedrl(t, env, append(sweep, "--out", local)...)
	t.Logf("local: %s", strings.TrimSpace(l.stdout.String()))

	remote := filepath.Join(dir, "kubernetes")
	before := jobNames(ctx, t, client, "eval")
	deleted := make(chan string, 1)
	go deleteOneRunningPod(ctx, client, "eval", deleted)
	p := runSchedrl(t, env, append(sweep, "--out", remote, "--config", config("store", 8, 2))...)
	t.Logf("kubernetes, 8 shards, 4 pods at a time: %s", strings.TrimSpace(p.stdout.String()))
	if !bytes.Equal(metricsWithoutTimings(t, filepath.Join(local, "metrics.json")), metricsWithoutTimings(t, filepath.Join(remote, "metrics.json"))) {
		t.Errorf("metrics.json of the kubernetes executor differs from the local run's\n%s", p.stderr.String())
	}
	a, _ := os.ReadFile(filepath.Join(local, "curves.csv"))
	b, _ := os.ReadFile(filepath.Join(remote, "curves.csv"))
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Errorf("curves.csv of the kubernetes executor differs from the local run's")
	}
	select {
	case pod := <-deleted:
		jobs := newJobs(ctx, t, client, "eval", before)
		if len(jobs) != 1 {
			t.Fatalf("eval jobs of the sweep: %v, want one", jobs)
		}
		j, err := client.BatchV1().Jobs("default").Get(ctx, jobs[0], metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if j.Status.Succeeded != 8 || j.Status.Failed < 1 {
			t.Errorf("job %s after deleting pod %s: %d succeeded, %d failed; want 8 and the deleted pod counted failed", j.Name, pod, j.Status.Succeeded, j.Status.Failed)
		}
		t.Logf("deleted pod %s mid-way; job %s: %d succeeded, %d failed pods", pod, j.Name, j.Status.Succeeded, j.Status.Failed)
	default:
		t.Error("no pod of the job was seen running, so none was deleted")
	}
	if !strings.Contains(p.stderr.String(), "done=8/8") {
		t.Errorf("the driver did not show shards done out of 8:\n%s", p.stderr.String())
	}

	// A timed world shards the same way: its metrics.json (less wall clock), jct.csv and
	// series.csv are the local run's.
	timed := []string{"eval", "--timed", "jobs", "--policies", "fifo,srtf,max_min_fairness", "--generate", "jobs=60,lam=600,multigpu",
		"--cluster", "8:8:8", "--seeds", "1-4"}
	runSchedrl(t, env, append(timed, "--out", filepath.Join(dir, "timed-local"))...)
	tp := runSchedrl(t, env, append(timed, "--out", filepath.Join(dir, "timed-kubernetes"), "--config", config("store", 4, 2))...)
	t.Logf("timed, kubernetes: %s", strings.TrimSpace(tp.stdout.String()))
	timedMetrics := func(run string) []byte {
		m, err := eval.ReadTimedMetrics(filepath.Join(dir, run, "metrics.json"))
		if err != nil {
			t.Fatal(err)
		}
		m.WallSeconds = 0
		for r := range m.Results {
			for s := range m.Results[r].PerSeed {
				m.Results[r].PerSeed[s].WallSeconds = 0
			}
		}
		data, _ := json.Marshal(m)
		return data
	}
	if !bytes.Equal(timedMetrics("timed-local"), timedMetrics("timed-kubernetes")) {
		t.Error("timed metrics.json of the kubernetes executor differs from the local run's")
	}
	for _, f := range []string{"jct.csv", "series.csv"} {
		a, _ := os.ReadFile(filepath.Join(dir, "timed-local", f))
		b, _ := os.ReadFile(filepath.Join(dir, "timed-kubernetes", f))
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Errorf("timed %s of the kubernetes executor differs from the local run's", f)
		}
	}

	// Pods that cannot write their parts: the Job fails, and the error names a shard and
	// quotes the end of its pod's log; no report is written.
	failed := filepath.Join(dir, "failed")
	f := startSchedrl(t, env, append(sweep, "--out", failed, "--config", config("wrong-store", 2, 0))...)
	if code := f.wait(); code == 0 {
		t.Fatal("eval succeeded with pods that cannot write their parts")
	}
	msg := f.stderr.String()
	t.Logf("the failed Job, as the driver reports it:\n%s", msg[strings.Index(msg, "\nschedrl: ")+1:])
	if !strings.Contains(msg, "failed shards") || !strings.Contains(msg, "last lines of its log") || !strings.Contains(msg, "shard ") ||
		!strings.Contains(msg, "Access Key Id") {
		t.Errorf("the failure does not name the shard and quote its log:\n%s", msg)
	}
	if _, err := os.Stat(failed); err == nil {
		t.Error("a failed eval wrote its report")
	}
}

// deleteOneRunningPod deletes the first pod of work (the executor's Work.Name) it sees
// running, at once (no grace), and says which.
func deleteOneRunningPod(ctx context.Context, client kubernetes.Interface, work string, deleted chan<- string) {
	for ctx.Err() == nil {
		pods, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "schedrl.io/work=" + work})
		if err == nil {
			for _, p := range pods.Items {
				if p.Status.Phase == corev1.PodRunning {
					if err := client.CoreV1().Pods("default").Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err == nil {
						deleted <- p.Name
						return
					}
				}
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
}
