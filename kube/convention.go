// Package kube maps Kubernetes objects onto schedrl's cluster model: a Node object becomes a
// sim.Node, a pod's GPU request a sim.Task, and a bound pod's GPU indices a sim.Choice. It also
// keeps a live model of the cluster from client-go informers ([Mirror]) for the extender and
// the defrag controller.
//
// # GPU request convention
//
// schedrl reads requests the way the openb trace's own scheduler (Alibaba's
// kubernetes-scheduler-simulator, where FGD was first deployed) writes them, so a trace pod
// round-trips unchanged:
//
//   - annotation alibabacloud.com/gpu-count: the number of GPUs (1..8);
//   - annotation alibabacloud.com/gpu-milli: the share of each GPU in milli-GPU (1..1000;
//     below 1000 only with one GPU): a GPU-sharing pod;
//   - annotation alibabacloud.com/gpu-card-model: the GPU models allowed, "V100M16|P100";
//   - or, for whole GPUs, the device plugins' resource nvidia.com/gpu: N in the containers'
//     limits (gpu-milli may then be absent or 1000, and gpu-count absent or N).
//
// A share cannot be an integer extended resource that the default scheduler counts per node
// (it must fit on one GPU), so shares live in annotations as in Alibaba's gpushare and the
// simulator; whole GPUs also accept nvidia.com/gpu so ordinary GPU pods need no change.
// CPU and memory are the pod's summed container requests (milli-cores, MiB).
//
// Nodes: capacity nvidia.com/gpu is the GPU count, label alibabacloud.com/gpu-card-model the
// model. A bound pod's GPUs are annotation alibabacloud.com/gpu-index, "0-3" (indices joined
// by '-'), written by the extender on the Binding (the API server copies it onto the pod as it binds),
// so a device plugin can honour it.
package kube

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedrl/schedrl/sim"
)

// Annotation, label and resource names of the GPU request convention.
const (
	AnnotGPUCount  = "alibabacloud.com/gpu-count"
	AnnotGPUMilli  = "alibabacloud.com/gpu-milli"
	AnnotGPUModel  = "alibabacloud.com/gpu-card-model"
	AnnotGPUIndex  = "alibabacloud.com/gpu-index"
	LabelGPUModel  = "alibabacloud.com/gpu-card-model"
	ResourceGPU    = corev1.ResourceName("nvidia.com/gpu")
	gpuIndexSep    = "-"
	mebi           = 1 << 20
	gpuModelSep    = "|"
	maxGPUsPerNode = sim.MaxGPUsPerNode
)

// TaskName is the name a pod has in the cluster model: namespace/name.
func TaskName(pod *corev1.Pod) string { return pod.Namespace + "/" + pod.Name }

// TaskOf reads a pod's request. A malformed GPU request is an error naming the field.
func TaskOf(pod *corev1.Pod) (sim.Task, error) {
	t := sim.Task{Name: TaskName(pod), Deletion: -1}
	var cpu, mem, whole int64
	for _, c := range pod.Spec.Containers {
		cpu += c.Resources.Requests.Cpu().MilliValue()
		mem += c.Resources.Requests.Memory().Value()
		if q, ok := c.Resources.Limits[ResourceGPU]; ok {
			whole += q.Value()
		} else if q, ok := c.Resources.Requests[ResourceGPU]; ok {
			whole += q.Value()
		}
	}
	t.CPU, t.Mem = cpu, int64(math.Ceil(float64(mem)/mebi))
	a := pod.Annotations
	count, err := annotInt(a, AnnotGPUCount, 0, maxGPUsPerNode)
	if err != nil {
		return t, err
	}
	milli, err := annotInt(a, AnnotGPUMilli, 0, sim.MilliPerGPU)
	if err != nil {
		return t, err
	}
	_, hasCount := a[AnnotGPUCount]
	_, hasMilli := a[AnnotGPUMilli]
	switch {
	case whole > maxGPUsPerNode:
		return t, fmt.Errorf("resource %s: %d GPUs, a node has at most %d", ResourceGPU, whole, maxGPUsPerNode)
	case whole > 0 && hasCount && count != whole:
		return t, fmt.Errorf("annotation %s %d disagrees with resource %s %d", AnnotGPUCount, count, ResourceGPU, whole)
	case whole > 0 && hasMilli && milli != sim.MilliPerGPU:
		return t, fmt.Errorf("annotation %s %d with resource %s (whole GPUs): want %d or none", AnnotGPUMilli, milli, ResourceGPU, sim.MilliPerGPU)
	case whole > 0:
		count, milli = whole, sim.MilliPerGPU
	case hasMilli && !hasCount:
		count = 1
	case hasCount && !hasMilli && count > 0:
		milli = sim.MilliPerGPU
	}
	switch {
	case count == 0 && milli != 0:
		return t, fmt.Errorf("annotation %s %d on a pod with %s 0", AnnotGPUMilli, milli, AnnotGPUCount)
	case count > 0 && milli == 0:
		return t, fmt.Errorf("annotation %s 0 on a pod asking for %d GPUs, want 1..%d", AnnotGPUMilli, count, sim.MilliPerGPU)
	case count > 1 && milli != sim.MilliPerGPU:
		return t, fmt.Errorf("annotation %s %d with %d GPUs: a share must fit on one GPU (%s 1), or ask for whole GPUs (%d)",
			AnnotGPUMilli, milli, count, AnnotGPUCount, sim.MilliPerGPU)
	}
	t.NumGPU, t.GPUMilli = int(count), milli
	if spec := strings.TrimSpace(a[AnnotGPUModel]); spec != "" && t.NumGPU > 0 {
		for _, m := range strings.Split(spec, gpuModelSep) {
			if m = strings.TrimSpace(m); m != "" && !slices.Contains(t.GPUTypes, m) {
				t.GPUTypes = append(t.GPUTypes, m)
			}
		}
	}
	return t, nil
}

// annotInt parses an optional integer annotation within lo..hi.
func annotInt(a map[string]string, key string, lo, hi int64) (int64, error) {
	s, ok := a[key]
	if !ok {
		return 0, nil
	}
	v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("annotation %s %q: not an integer", key, s)
	}
	if v < lo || v > hi {
		return 0, fmt.Errorf("annotation %s %d: outside %d..%d", key, v, lo, hi)
	}
	return v, nil
}

// NodeOf reads a Node object's allocatable CPU, memory and GPUs and its GPU model label.
func NodeOf(n *corev1.Node) (sim.Node, error) {
	res := n.Status.Allocatable
	if len(res) == 0 {
		res = n.Status.Capacity
	}
	gpus := res.Name(ResourceGPU, resource.DecimalSI).Value()
	if gpus < 0 || gpus > maxGPUsPerNode {
		return sim.Node{}, fmt.Errorf("node %s: %s %d outside 0..%d", n.Name, ResourceGPU, gpus, maxGPUsPerNode)
	}
	out := sim.Node{Name: n.Name, CPU: res.Cpu().MilliValue(), Mem: res.Memory().Value() / mebi, GPUs: int(gpus)}
	if gpus > 0 {
		out.GPUType = n.Labels[LabelGPUModel]
	}
	return out, nil
}

// FormatGPUIndex is the gpu-index annotation of a GPU set ("0-3"); empty for no GPUs.
func FormatGPUIndex(s sim.GPUSet) string {
	idx := s.Indices()
	parts := make([]string, len(idx))
	for k, i := range idx {
		parts[k] = strconv.Itoa(i)
	}
	return strings.Join(parts, gpuIndexSep)
}

// ParseGPUIndex reads a gpu-index annotation.
func ParseGPUIndex(s string) (sim.GPUSet, error) {
	var set sim.GPUSet
	if strings.TrimSpace(s) == "" {
		return 0, nil
	}
	for _, p := range strings.Split(s, gpuIndexSep) {
		i, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || i < 0 || i >= maxGPUsPerNode {
			return 0, fmt.Errorf("annotation %s %q: %q is not a GPU index 0..%d", AnnotGPUIndex, s, p, maxGPUsPerNode-1)
		}
		if set.Has(i) {
			return 0, fmt.Errorf("annotation %s %q: GPU %d repeated", AnnotGPUIndex, s, i)
		}
		set |= sim.NewGPUSet(i)
	}
	return set, nil
}

// PodAnnotations are the convention's annotations for a task (what a trace pod carries).
func PodAnnotations(t sim.Task) map[string]string {
	a := map[string]string{}
	if t.NumGPU > 0 {
		a[AnnotGPUCount] = strconv.Itoa(t.NumGPU)
		a[AnnotGPUMilli] = strconv.FormatInt(t.GPUMilli, 10)
		if len(t.GPUTypes) > 0 {
			a[AnnotGPUModel] = t.Spec()
		}
	}
	return a
}

// Quantities is a task's CPU and memory as container requests.
func Quantities(t sim.Task) corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(t.CPU, resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(t.Mem*mebi, resource.BinarySI),
	}
}

// NodeObject is the Node object of a model node: capacity and allocatable CPU, memory,
// nvidia.com/gpu and a pod limit, and the GPU model label.
func NodeObject(n sim.Node) *corev1.Node {
	res := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(n.CPU, resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(n.Mem*mebi, resource.BinarySI),
		corev1.ResourcePods:   *resource.NewQuantity(maxPodsPerNode, resource.DecimalSI),
		ResourceGPU:           *resource.NewQuantity(int64(n.GPUs), resource.DecimalSI),
	}
	labels := map[string]string{corev1.LabelHostname: n.Name}
	if n.GPUs > 0 && n.GPUType != "" {
		labels[LabelGPUModel] = n.GPUType
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: labels},
		Status: corev1.NodeStatus{Capacity: res, Allocatable: res.DeepCopy(),
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
}

// maxPodsPerNode is NodeObject's pod limit: the trace's task counts, not a kubelet's 110.
const maxPodsPerNode = 1000

// PodObject is a pod asking for a task's request in the convention: CPU and memory requests,
// whole GPUs as nvidia.com/gpu limits, a share as annotations; model constraint annotated.
func PodObject(t sim.Task, namespace, name string) *corev1.Pod {
	c := corev1.Container{Name: "main", Image: "registry.k8s.io/pause:3.10",
		Resources: corev1.ResourceRequirements{Requests: Quantities(t)}}
	a := PodAnnotations(t)
	if t.NumGPU > 0 && !t.Sharing() {
		c.Resources.Limits = corev1.ResourceList{ResourceGPU: *resource.NewQuantity(int64(t.NumGPU), resource.DecimalSI)}
		delete(a, AnnotGPUCount)
		delete(a, AnnotGPUMilli)
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Annotations: a},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{c}},
	}
}

// ClusterOf builds the model of Node objects and the pods bound to them (terminated pods
// left out), nodes in name order. Every bound pod must fit where it is, on the GPUs its
// gpu-index annotation names: an over-committed node or GPU is an error naming the pod.
func ClusterOf(nodes []corev1.Node, pods []corev1.Pod, model *sim.FragModel) (*sim.Cluster, error) {
	sorted := slices.Clone(nodes)
	slices.SortFunc(sorted, func(a, b corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	sn := make([]sim.Node, len(sorted))
	for i := range sorted {
		n, err := NodeOf(&sorted[i])
		if err != nil {
			return nil, err
		}
		sn[i] = n
	}
	c, err := sim.NewCluster(sn, model)
	if err != nil {
		return nil, err
	}
	bound := slices.Clone(pods)
	slices.SortFunc(bound, func(a, b corev1.Pod) int { return strings.Compare(TaskName(&a), TaskName(&b)) })
	for i := range bound {
		p := &bound[i]
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		t, err := TaskOf(p)
		if err != nil {
			return nil, fmt.Errorf("pod %s: %w", TaskName(p), err)
		}
		gpus, err := ParseGPUIndex(p.Annotations[AnnotGPUIndex])
		if err != nil {
			return nil, fmt.Errorf("pod %s: %w", TaskName(p), err)
		}
		node, ok := c.NodeIndex(p.Spec.NodeName)
		if !ok {
			return nil, fmt.Errorf("pod %s: bound to node %s, which has no Node object", TaskName(p), p.Spec.NodeName)
		}
		if err := c.Place(t, sim.Choice{Node: node, GPUs: gpus}); err != nil {
			return nil, fmt.Errorf("pod %s: %w", TaskName(p), err)
		}
	}
	return c, nil
}
