package testserver

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedrl/schedrl/kube"
	"github.com/schedrl/schedrl/sim"
)

// TestKubeControlPlane runs the real control plane: the scheduler binds a pod asking for
// nvidia.com/gpu to the one Node object with room, and the objects survive an API server
// restart (etcd keeps them).
func TestKubeControlPlane(t *testing.T) {
	k, err := StartKube()
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	nodes := []sim.Node{{Name: "cpu-only", CPU: 64000, Mem: 262144}, {Name: "gpu", CPU: 64000, Mem: 262144, GPUs: 2, GPUType: "V100M16"}}
	objs := []*corev1.Node{kube.NodeObject(nodes[0]), kube.NodeObject(nodes[1])}
	if err := k.CreateNodes(ctx, objs); err != nil {
		t.Fatal(err)
	}
	if err := k.StartScheduler(Extender{}); err != nil {
		t.Fatal(err)
	}
	client, err := k.Client()
	if err != nil {
		t.Fatal(err)
	}
	pod := kube.PodObject(sim.Task{CPU: 1000, Mem: 1024, NumGPU: 2, GPUMilli: 1000}, "default", "two-gpus")
	if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		p, err := client.CoreV1().Pods("default").Get(ctx, "two-gpus", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Spec.NodeName != "" {
			if p.Spec.NodeName != "gpu" {
				t.Fatalf("bound to %s, want gpu", p.Spec.NodeName)
			}
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("not bound:\n%s", k.SchedulerLog())
		}
		time.Sleep(100 * time.Millisecond)
	}
	k.StopAPIServer()
	if _, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err == nil {
		t.Fatal("stopped API server still answers")
	}
	if err := k.StartAPIServer(); err != nil {
		t.Fatal(err)
	}
	list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 2 {
		t.Fatalf("after restart: %v nodes, err %v", len(list.Items), err)
	}
}
