package kube

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/schedrl/schedrl/sim"
)

// TestTaskOfRoundTrip: the pod a task becomes reads back as the same task, for CPU-only,
// GPU-sharing and whole-GPU requests (whole GPUs as nvidia.com/gpu), and a node likewise.
func TestTaskOfRoundTrip(t *testing.T) {
	for _, want := range []sim.Task{
		{CPU: 4000, Mem: 8192},
		{CPU: 6000, Mem: 12288, NumGPU: 1, GPUMilli: 460},
		{CPU: 12000, Mem: 16384, NumGPU: 4, GPUMilli: 1000, GPUTypes: []string{"V100M16", "P100"}},
	} {
		want.Name, want.Deletion = "default/p", -1
		got, err := TaskOf(PodObject(want, "default", "p"))
		if err != nil {
			t.Fatal(err)
		}
		if got.Name != want.Name || got.CPU != want.CPU || got.Mem != want.Mem || got.NumGPU != want.NumGPU ||
			got.GPUMilli != want.GPUMilli || got.Spec() != want.Spec() {
			t.Errorf("got %+v, want %+v", got, want)
		}
	}
	n := sim.Node{Name: "n", CPU: 64000, Mem: 262144, GPUs: 8, GPUType: "A100"}
	if got, err := NodeOf(NodeObject(n)); err != nil || got != n {
		t.Fatalf("node: got %+v (%v), want %+v", got, err, n)
	}
}

// TestTaskOfRefusesMalformedRequests: every malformed GPU request is an error naming the
// annotation or resource at fault.
func TestTaskOfRefusesMalformedRequests(t *testing.T) {
	gpus := func(n int64) corev1.ResourceList {
		return corev1.ResourceList{ResourceGPU: *resource.NewQuantity(n, resource.DecimalSI)}
	}
	for _, c := range []struct {
		annot  map[string]string
		limits corev1.ResourceList
		want   string
	}{
		{map[string]string{AnnotGPUMilli: "half"}, nil, `annotation alibabacloud.com/gpu-milli "half": not an integer`},
		{map[string]string{AnnotGPUMilli: "1500"}, nil, "gpu-milli 1500: outside 0..1000"},
		{map[string]string{AnnotGPUCount: "9"}, nil, "gpu-count 9: outside 0..8"},
		{map[string]string{AnnotGPUCount: "2", AnnotGPUMilli: "500"}, nil, "a share must fit on one GPU"},
		{map[string]string{AnnotGPUCount: "1", AnnotGPUMilli: "0"}, nil, "gpu-milli 0 on a pod asking for 1 GPUs"},
		{map[string]string{AnnotGPUCount: "0", AnnotGPUMilli: "300"}, nil, "gpu-milli 300 on a pod with alibabacloud.com/gpu-count 0"},
		{map[string]string{AnnotGPUCount: "3"}, gpus(2), "gpu-count 3 disagrees with resource nvidia.com/gpu 2"},
		{map[string]string{AnnotGPUMilli: "500"}, gpus(1), "gpu-milli 500 with resource nvidia.com/gpu"},
		{nil, gpus(9), "resource nvidia.com/gpu: 9 GPUs"},
	} {
		pod := PodObject(sim.Task{CPU: 1000, Mem: 1024}, "default", "p")
		pod.Annotations = c.annot
		pod.Spec.Containers[0].Resources.Limits = c.limits
		if _, err := TaskOf(pod); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v %v: err %v, want %q", c.annot, c.limits, err, c.want)
		}
	}
}

// TestGPUIndex: the gpu-index annotation round-trips, and bad ones are refused.
func TestGPUIndex(t *testing.T) {
	s := sim.NewGPUSet(0, 3, 7)
	if f := FormatGPUIndex(s); f != "0-3-7" {
		t.Fatalf("format %q", f)
	}
	if got, err := ParseGPUIndex("0-3-7"); err != nil || got != s {
		t.Fatalf("parse: %v %v", got, err)
	}
	for _, bad := range []string{"8", "1-1", "a", "-1"} {
		if _, err := ParseGPUIndex(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
