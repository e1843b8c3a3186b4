package descheduler_test

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/schedrl/schedrl/defrag"
	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/internal/repotest"
	"github.com/schedrl/schedrl/kube"
	"github.com/schedrl/schedrl/kube/descheduler"
	"github.com/schedrl/schedrl/kube/kubetest"
	"github.com/schedrl/schedrl/policy"
	"github.com/schedrl/schedrl/sim"
)

const (
	seed   = 7
	budget = 6
)

// fragmented builds a fragmented cluster the way the extender test does: 40 openb nodes, the
// seeded default workload's first tasks that FGD can place there submitted as pods through
// kube-scheduler and the extender, then a seeded 40% of them deleted (departures).
func fragmented(t *testing.T) (*kubetest.Served, kubernetes.Interface, *sim.FragModel, map[string]sim.Task) {
	t.Helper()
	p, err := sim.Prepare(sim.Experiment{NodesPath: repotest.OpenbNodes(), PodsPath: repotest.OpenbPods("default"),
		Tune: 1.3, Seed: seed, Coverage: 0.95})
	if err != nil {
		t.Fatal(err)
	}
	var nodes []sim.Node
	for i := 0; i < len(p.Nodes) && len(nodes) < 40; i += 30 {
		nodes = append(nodes, p.Nodes[i])
	}
	// The prefix of the workload that fits: later arrivals would stay pending and take the
	// room the departures free.
	c, err := sim.NewCluster(nodes, p.Model)
	if err != nil {
		t.Fatal(err)
	}
	c.SetTieOrder(sim.SeededTieOrder(len(nodes), seed))
	fgd, _ := policy.NewPlacer("fgd")
	var tasks []sim.Task
	for _, task := range p.Workload {
		ch, ok := fgd.Place(c, task, nil)
		if !ok {
			break
		}
		c.Place(task, ch)
		tasks = append(tasks, task)
	}
	s := kubetest.Serve(t, nodes, p.Model, seed, true)
	client, err := s.Kube.Client()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := kubetest.Submit(ctx, client, "default", tasks, time.Minute); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	left := len(tasks)
	zero := int64(0)
	for _, task := range tasks {
		if rng.Float64() < 0.4 {
			if err := client.CoreV1().Pods("default").Delete(ctx, task.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
				t.Fatal(err)
			}
			left--
		}
	}
	waitRunning(t, s.Mirror, left)
	t.Logf("%d nodes, %d tasks submitted, %d left after departures", len(nodes), len(tasks), left)
	byName := map[string]sim.Task{}
	for _, task := range tasks {
		byName[task.Name] = task
	}
	return s, client, p.Model, byName
}

// waitRunning waits until the model holds n pods.
func waitRunning(t *testing.T, m *kube.Mirror, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var got int
		m.Do(func(c *sim.Cluster, _ kube.Txn) error { got = c.Running(); return nil })
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("model holds %d pods, want %d", got, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func controller(t *testing.T, s *kubetest.Served, client kubernetes.Interface, evict bool) *descheduler.Controller {
	return limitedController(t, s, client, evict, 100)
}

func limitedController(t *testing.T, s *kubetest.Served, client kubernetes.Interface, evict bool, perHour int) *descheduler.Controller {
	t.Helper()
	fgd, _ := policy.NewPlacer("fgd")
	d, _ := policy.NewDefragmenter("frag-one-pod")
	zero := int64(0)
	c, err := descheduler.New(descheduler.Options{Client: client, Mirror: s.Mirror, Planner: defrag.Heuristic{D: d}, Placer: fgd,
		Defrag: env.DefragOptions{Budget: budget, RewardFragment: 1, RewardPending: 1, MigrationCost: 0.1}, Seed: seed,
		Interval: time.Minute, Evict: evict, MaxPerHour: perHour, GracePeriod: &zero})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// protect puts a PodDisruptionBudget (minAvailable 1) over one pod, with the status the
// disruption controller would write (the test control plane runs no controller manager). The
// pod is reported running and ready, as its kubelet would: the Eviction API lets pending pods
// go whatever their budget says.
func protect(t *testing.T, client kubernetes.Interface, name string) {
	t.Helper()
	ctx := context.Background()
	pods := client.CoreV1().Pods("default")
	patch := []byte(`{"metadata":{"labels":{"protected":"` + name + `"}}}`)
	pod, err := pods.Patch(ctx, name, "application/merge-patch+json", patch, metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Status.Phase = corev1.PodRunning
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue})
	if _, err := pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	one := intstr.FromInt32(1)
	pdb, err := client.PolicyV1().PodDisruptionBudgets("default").Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "protect"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &one,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"protected": name}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pdb.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, DisruptionsAllowed: 0,
		CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 1}
	if _, err := client.PolicyV1().PodDisruptionBudgets("default").UpdateStatus(ctx, pdb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestDefragController: on a fragmented cluster a dry-run round evicts nothing and reports its
// plan as Events; an evicting round evicts at most the budget, the API server refuses the
// eviction a PodDisruptionBudget forbids, and once the owner (the test) re-creates the
// evicted pods and kube-scheduler with the extender places them, the fragment is within one
// task's worth of what the plan promised for the evictions made; the bound pods replay in the
// simulator without over-commit; at one eviction an hour, a round evicts one pod at most.
func TestDefragController(t *testing.T) {
	s, client, model, tasks := fragmented(t)
	ctx := context.Background()

	dry, err := controller(t, s, client, false).Once(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(dry.Plan.Steps) < 2 || len(dry.Evicted) != 0 {
		t.Fatalf("dry run: %d steps, %d evicted; want a plan of >= 2 migrations and no eviction", len(dry.Plan.Steps), len(dry.Evicted))
	}
	events, err := client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "reason=" + descheduler.ReasonPlanned})
	if err != nil || len(events.Items) != len(dry.Plan.Steps) {
		t.Fatalf("dry run: %d %s events for %d steps (err %v)", len(events.Items), descheduler.ReasonPlanned, len(dry.Plan.Steps), err)
	}
	blocked := strings.TrimPrefix(dry.Plan.Steps[len(dry.Plan.Steps)-1].Task, "default/")
	protect(t, client, blocked)

	rep, err := controller(t, s, client, true).Once(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Evicted) > budget || len(rep.Evicted) == 0 {
		t.Fatalf("evicted %d pods, budget %d", len(rep.Evicted), budget)
	}
	if _, ok := rep.Refused["default/"+blocked]; !ok {
		t.Fatalf("eviction of PDB-protected %s not refused: refused %v", blocked, rep.Refused)
	}
	if _, err := client.CoreV1().Pods("default").Get(ctx, blocked, metav1.GetOptions{}); err != nil {
		t.Fatalf("protected pod: %v", err)
	}

	// The owner re-creates each evicted pod, in eviction order, once it is gone.
	var again []sim.Task
	for _, m := range rep.Evicted {
		name := strings.TrimPrefix(m.Task, "default/")
		for {
			_, err := client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		again = append(again, tasks[name])
	}
	if _, err := kubetest.Submit(ctx, client, "default", again, time.Minute); err != nil {
		t.Fatal(err)
	}
	final, err := kubetest.Replay(ctx, client, model)
	if err != nil {
		t.Fatalf("bound pods do not replay in the simulator: %v", err)
	}
	// One task's worth of fragment: the largest change a single migration of the plan makes.
	oneTask, prev := 0.0, rep.Plan.Before.FragGPU
	for _, st := range rep.Plan.Steps {
		oneTask, prev = max(oneTask, math.Abs(st.After.FragGPU-prev)), st.After.FragGPU
	}
	got := final.Metrics().FragGPU
	t.Logf("plan %d migrations (budget %d), evicted %d, refused %d; fragment %.2f GPUs -> plan %.2f, promised for the evictions made %.2f, after re-creation %.2f (one task: %.2f)",
		len(rep.Plan.Steps), budget, len(rep.Evicted), len(rep.Refused), rep.Plan.Before.FragGPU, rep.Plan.After.FragGPU,
		rep.Promised.FragGPU, got, oneTask)
	if math.Abs(got-rep.Promised.FragGPU) > oneTask {
		t.Fatalf("fragment after re-creation %.2f GPUs, promised %.2f: more than one task's worth (%.2f) apart", got, rep.Promised.FragGPU, oneTask)
	}

	// One eviction an hour: a round evicts at most one pod and reports the rest as limited.
	limited, err := limitedController(t, s, client, true, 1).Once(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(limited.Evicted) > 1 || len(limited.Evicted)+len(limited.Limited)+len(limited.Refused) != len(limited.Plan.Steps) {
		t.Fatalf("rate limit 1/h: %d steps, %d evicted, %d limited, %d refused", len(limited.Plan.Steps), len(limited.Evicted),
			len(limited.Limited), len(limited.Refused))
	}
	if len(limited.Plan.Steps) >= 2 && len(limited.Limited) == 0 {
		t.Fatalf("rate limit 1/h: %d steps, none limited", len(limited.Plan.Steps))
	}
	t.Logf("rate limit 1/h: %d steps, %d evicted, %d limited", len(limited.Plan.Steps), len(limited.Evicted), len(limited.Limited))
}
