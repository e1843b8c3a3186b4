package extender_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedrl/schedrl/internal/testserver"
	"github.com/schedrl/schedrl/kube"
	"github.com/schedrl/schedrl/kube/kubetest"
	"github.com/schedrl/schedrl/policy"
	"github.com/schedrl/schedrl/sim"
)

// TestMalformedRequestRefusedWithReason: a pod whose GPU share is not a number fails the
// extender's filter on every node, and the scheduler's unschedulable condition shows why.
func TestMalformedRequestRefusedWithReason(t *testing.T) {
	p := experiment(t)
	s := kubetest.Serve(t, p.Nodes[:20], p.Model, seed, true)
	client, err := s.Kube.Client()
	if err != nil {
		t.Fatal(err)
	}
	pod := kube.PodObject(sim.Task{CPU: 1000, Mem: 1024, NumGPU: 1, GPUMilli: 500}, "default", "malformed")
	pod.Annotations[kube.AnnotGPUMilli] = "half"
	o, err := kubetest.SubmitPod(context.Background(), client, pod, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if o.Bound || !strings.Contains(o.Reason, `malformed GPU request: annotation alibabacloud.com/gpu-milli "half": not an integer`) {
		t.Fatalf("bound %v, reason %q", o.Bound, o.Reason)
	}
}

// TestAPIServerRestartMidRun: the API server goes away for two seconds while pods arrive;
// the informers reconnect, every pod is bound where the simulator puts it, and nothing is
// over-committed.
func TestAPIServerRestartMidRun(t *testing.T) {
	p := experiment(t)
	nodes := p.Nodes[:100]
	tasks := p.Workload[:60]
	s := kubetest.Serve(t, nodes, p.Model, seed, true)
	client, err := s.Kube.Client()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	var restartErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			list, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
			if err == nil && len(list.Items) >= 20 {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		s.Kube.StopAPIServer()
		time.Sleep(2 * time.Second)
		restartErr = s.Kube.StartAPIServer()
	}()
	got, err := kubetest.Submit(ctx, client, "default", tasks, 2*time.Minute)
	wg.Wait()
	if restartErr != nil {
		t.Fatal(restartErr)
	}
	if err != nil {
		t.Fatalf("%v\n%s", err, s.Kube.SchedulerLog())
	}
	ref := *p
	ref.Nodes = nodes
	fgd, _ := policy.NewPlacer("fgd")
	want, err := kubetest.Simulate(&ref, tasks, fgd)
	if err != nil {
		t.Fatal(err)
	}
	if d := kubetest.Diff(got, want, 10); len(d) > 0 {
		t.Fatalf("after the restart the extender disagrees with the simulator:\n%s", strings.Join(d, "\n"))
	}
	if _, err := kubetest.Replay(ctx, client, p.Model); err != nil {
		t.Fatalf("bound pods do not replay in the simulator: %v", err)
	}
}

// TestExtenderDown: with the extender unreachable, an ignorable extender is skipped (the
// default scheduler binds the pod alone) and a required one keeps the pod pending.
func TestExtenderDown(t *testing.T) {
	k, err := testserver.StartKube()
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	ctx := context.Background()
	if err := kubetest.RegisterNodes(ctx, k, []sim.Node{{Name: "gpu", CPU: 64000, Mem: 262144, GPUs: 8, GPUType: "V100M16"}}); err != nil {
		t.Fatal(err)
	}
	client, err := k.Client()
	if err != nil {
		t.Fatal(err)
	}
	port, err := testserver.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	down := testserver.Extender{URL: "http://127.0.0.1:" + strconv.Itoa(port), Timeout: time.Second}
	task := sim.Task{CPU: 1000, Mem: 1024, NumGPU: 1, GPUMilli: 1000}

	down.Ignorable = true
	if err := k.StartScheduler(down); err != nil {
		t.Fatal(err)
	}
	o, err := kubetest.SubmitPod(ctx, client, kube.PodObject(task, "default", "ignorable"), 30*time.Second)
	if err != nil || !o.Bound || o.Node != "gpu" {
		t.Fatalf("ignorable extender down: %+v, %v\n%s", o, err, k.SchedulerLog())
	}

	down.Ignorable = false
	if err := k.StartScheduler(down); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Pods("default").Create(ctx, kube.PodObject(task, "default", "required"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		pod, err := client.CoreV1().Pods("default").Get(ctx, "required", metav1.GetOptions{})
		if err != nil || pod.Spec.NodeName != "" {
			t.Fatalf("required extender down: pod bound to %q (err %v)", pod.Spec.NodeName, err)
		}
		if failed := scheduleFailure(pod); strings.Contains(failed, "connection refused") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("required extender down: no scheduling failure naming the extender\n%s", k.SchedulerLog())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// scheduleFailure is the message of a pod's PodScheduled=False condition.
func scheduleFailure(pod *corev1.Pod) string {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return c.Message
		}
	}
	return ""
}
