// Package kubetest drives a real control plane (internal/testserver.Kube) for the deploy
// tests: it registers a model's nodes, submits tasks as pods one at a time in arrival order
// (each waits until the scheduler bound it or gave up, so the order is exactly the
// simulator's), and replays what was bound in the simulator to check it.
package kubetest

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/schedrl/schedrl/internal/testserver"
	"github.com/schedrl/schedrl/kube"
	"github.com/schedrl/schedrl/sim"
)

// Outcome is where a submitted pod ended up.
type Outcome struct {
	Task   string
	Bound  bool
	Node   string
	GPUs   sim.GPUSet
	Reason string // the scheduler's message when it could not place the pod
}

// Submit creates one pod per task (named after the task) in namespace and waits, for each in
// turn, until it is bound or marked unschedulable; waitEach bounds the wait per pod. API
// errors are retried until then, so a restarting API server only slows it down.
func Submit(ctx context.Context, client kubernetes.Interface, namespace string, tasks []sim.Task, waitEach time.Duration) ([]Outcome, error) {
	out := make([]Outcome, 0, len(tasks))
	for _, t := range tasks {
		o, err := submitOne(ctx, client, namespace, t, waitEach)
		if err != nil {
			return out, err
		}
		out = append(out, o)
	}
	return out, nil
}

func submitOne(ctx context.Context, client kubernetes.Interface, namespace string, t sim.Task, wait time.Duration) (Outcome, error) {
	return SubmitPod(ctx, client, kube.PodObject(t, namespace, t.Name), wait)
}

// SubmitPod creates a pod and waits until it is bound or marked unschedulable.
func SubmitPod(ctx context.Context, client kubernetes.Interface, obj *corev1.Pod, wait time.Duration) (Outcome, error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	pods := client.CoreV1().Pods(obj.Namespace)
	var lastErr error
	for {
		_, err := pods.Create(ctx, obj, metav1.CreateOptions{})
		if err == nil || apierrors.IsAlreadyExists(err) {
			break
		}
		lastErr = err
		if !sleep(ctx, 50*time.Millisecond) {
			return Outcome{}, fmt.Errorf("kubetest: create pod %s: %w", obj.Name, lastErr)
		}
	}
	for {
		p, err := pods.Get(ctx, obj.Name, metav1.GetOptions{})
		if err == nil {
			if p.Spec.NodeName != "" {
				gpus, err := kube.ParseGPUIndex(p.Annotations[kube.AnnotGPUIndex])
				return Outcome{Task: obj.Name, Bound: true, Node: p.Spec.NodeName, GPUs: gpus}, err
			}
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
					return Outcome{Task: obj.Name, Reason: c.Message}, nil
				}
			}
		} else {
			lastErr = err
		}
		if !sleep(ctx, 5*time.Millisecond) {
			return Outcome{}, fmt.Errorf("kubetest: pod %s neither bound nor unschedulable within %s (last error: %v)", obj.Name, wait, lastErr)
		}
	}
}

func sleep(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// Simulate is what `schedrl sim` decides for the same sequence: tasks placed one by one by
// placer on the experiment's cluster (its seeded tie order), with the seed's policy stream.
func Simulate(p *sim.Prepared, tasks []sim.Task, placer sim.Placer) ([]Outcome, error) {
	c, err := p.NewCluster()
	if err != nil {
		return nil, err
	}
	return SimulateOn(c, p.Seed, tasks, placer)
}

// SimulateOn is Simulate on a given cluster (its nodes, tie order and what it already holds),
// such as a live cluster's model from kube.ClusterOf.
func SimulateOn(c *sim.Cluster, seed uint64, tasks []sim.Task, placer sim.Placer) ([]Outcome, error) {
	if _, err := sim.RunArrivals(c, tasks, placer, sim.RNG(seed, sim.StreamPolicy), nil); err != nil {
		return nil, err
	}
	out := make([]Outcome, len(tasks))
	for k, t := range tasks {
		out[k] = Outcome{Task: t.Name}
		if pl, ok := c.Placement(t.Name); ok {
			out[k].Bound, out[k].Node, out[k].GPUs = true, c.Node(pl.Choice.Node).Name, pl.Choice.GPUs
		}
	}
	return out, nil
}

// Diff lists where got and want disagree (bound or not, node, GPUs), at most max lines.
func Diff(got, want []Outcome, max int) []string {
	var out []string
	if len(got) != len(want) {
		out = append(out, fmt.Sprintf("%d outcomes, want %d", len(got), len(want)))
	}
	for k := range min(len(got), len(want)) {
		g, w := got[k], want[k]
		if g.Task != w.Task || g.Bound != w.Bound || g.Node != w.Node || g.GPUs != w.GPUs {
			out = append(out, fmt.Sprintf("#%d %s: kube bound=%v %s GPUs %v (%s), sim bound=%v %s GPUs %v",
				k, w.Task, g.Bound, g.Node, g.GPUs, g.Reason, w.Bound, w.Node, w.GPUs))
		}
		if len(out) >= max {
			break
		}
	}
	return out
}

// RegisterNodes creates the Node objects of model nodes.
func RegisterNodes(ctx context.Context, k *testserver.Kube, nodes []sim.Node) error {
	objs := make([]*corev1.Node, len(nodes))
	for i, n := range nodes {
		objs[i] = kube.NodeObject(n)
	}
	return k.CreateNodes(ctx, objs)
}

// Replay rebuilds the cluster from the API server's Node objects and bound pods in a fresh
// simulator: every bound pod must fit where it is bound, on the GPUs its gpu-index annotation
// names, so an over-committed GPU or node is an error.
func Replay(ctx context.Context, client kubernetes.Interface, model *sim.FragModel) (*sim.Cluster, error) {
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	pods, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	return kube.ClusterOf(nodes.Items, pods.Items, model)
}
