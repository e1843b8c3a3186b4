package podlog_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/schedrl/schedrl/internal/testserver"
	"github.com/schedrl/schedrl/kube"
	"github.com/schedrl/schedrl/kube/kubetest"
	"github.com/schedrl/schedrl/kube/podlog"
	"github.com/schedrl/schedrl/sim"
)

// dump writes what `kubectl get nodes,pods -o json` writes: a List of Node and Pod objects.
func dump(t *testing.T, ctx context.Context, client kubernetes.Interface, path string) {
	t.Helper()
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pods, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var items []any
	for _, n := range nodes.Items {
		n.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Node"}
		items = append(items, n)
	}
	for _, p := range pods.Items {
		p.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
		items = append(items, p)
	}
	data, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestImportDefaultScheduler: the acceptance workload placed by kube-scheduler alone (no
// extender: no gpu-index annotations), dumped after the first 300 pods and after the
// deletions and 100 more; the imported log replays, its binds are the API server's nodes (GPUs
// by the tightest-fit rule), the 120 deleted pods are reported as deleted between the dumps,
// and a live import through a kubeconfig gives the same binds for the pods it sees.
func TestImportDefaultScheduler(t *testing.T) {
	p := experiment(t)
	k, err := testserver.StartKube()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	ctx := context.Background()
	if err := kubetest.RegisterNodes(ctx, k, p.Nodes); err != nil {
		t.Fatal(err)
	}
	if err := k.StartScheduler(testserver.Extender{}); err != nil {
		t.Fatal(err)
	}
	client, err := k.Client()
	if err != nil {
		t.Fatal(err)
	}
	out1, err := kubetest.Submit(ctx, client, "default", p.Workload[:300], time.Minute)
	if err != nil {
		t.Fatalf("%v\n%s", err, k.SchedulerLog())
	}
	dir := t.TempDir()
	dump(t, ctx, client, filepath.Join(dir, "d1.json"))
	var names []string
	for _, o := range out1 {
		if o.Bound {
			names = append(names, o.Task)
		}
	}
	gone := deleteShare(t, ctx, client, names, 0.4)
	if _, err := kubetest.Submit(ctx, client, "default", p.Workload[300:400], time.Minute); err != nil {
		t.Fatal(err)
	}
	dump(t, ctx, client, filepath.Join(dir, "d2.json"))
	var snaps []podlog.Snapshot
	for _, d := range []string{"d1.json", "d2.json"} {
		s, err := podlog.ReadDump(filepath.Join(dir, d))
		if err != nil {
			t.Fatal(err)
		}
		snaps = append(snaps, s)
	}
	var buf, podList, nodeList bytes.Buffer
	rep, err := podlog.Import(snaps, &buf, podlog.ImportOptions{PodList: &podList, NodeList: &nodeList})
	if err != nil {
		t.Fatal(err)
	}
	// SCHEDRL_PODLOG_KEEP=DIR keeps the imported log and its openb lists (docs/decision-log.md
	// clones the log and fine-tunes and evaluates on the lists).
	if keep := os.Getenv("SCHEDRL_PODLOG_KEEP"); keep != "" {
		dir = keep
	}
	logPath := filepath.Join(dir, "cluster.jsonl")
	for path, data := range map[string][]byte{logPath: buf.Bytes(), filepath.Join(dir, "cluster-pods.csv"): podList.Bytes(),
		filepath.Join(dir, "cluster-nodes.csv"): nodeList.Bytes()} {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The openb lists read back by the simulator's readers: a row per imported pod, the
	// submitted workload's totals, a scheduled_time per bind of the log, the log's nodes.
	tasks, err := sim.LoadTasks(filepath.Join(dir, "cluster-pods.csv"))
	if err != nil {
		t.Fatal(err)
	}
	var want, gotTot [3]int64
	for _, w := range p.Workload[:400] {
		want[0], want[1], want[2] = want[0]+w.CPU, want[1]+w.Mem, want[2]+int64(w.NumGPU)*w.GPUMilli
	}
	scheduled := 0
	for _, task := range tasks {
		gotTot[0], gotTot[1], gotTot[2] = gotTot[0]+task.CPU, gotTot[1]+task.Mem, gotTot[2]+int64(task.NumGPU)*task.GPUMilli
		if task.Scheduled >= 0 {
			scheduled++
		}
	}
	if len(tasks) != 400 || gotTot != want || scheduled != rep.Binds {
		t.Errorf("pod list: %d rows, cpu/mem/gpu-milli %v, %d scheduled; want 400, %v, %d binds", len(tasks), gotTot, scheduled, want, rep.Binds)
	}
	if n, err := sim.LoadNodes(filepath.Join(dir, "cluster-nodes.csv")); err != nil || len(n) != rep.Nodes {
		t.Errorf("node list: %d nodes (%v), log %d", len(n), err, rep.Nodes)
	}
	got := readLogs(t, []string{logPath})
	if len(rep.DeletedBetweenDumps) != len(gone) || rep.Pods != 400 || len(got.arrived) != 400 {
		t.Errorf("report %d pods, %d deleted between dumps; log %d arrivals; want 400, %d, 400", rep.Pods, len(rep.DeletedBetweenDumps), len(got.arrived), len(gone))
	}
	pods, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	refused := strings.Join(rep.Refused, "\n")
	for _, pod := range pods.Items {
		name := kube.TaskName(&pod)
		g, ok := got.bound[name]
		switch {
		case pod.Spec.NodeName == "":
			if ok {
				t.Errorf("%s: waiting in the API server, bound to %s in the log", name, g.Node)
			}
		case !ok && !strings.Contains(refused, name+":"):
			t.Errorf("%s: bound to %s, neither in the log nor reported refused", name, pod.Spec.NodeName)
		case ok && g.Node != pod.Spec.NodeName:
			t.Errorf("%s: bound to %s, log says %s", name, pod.Spec.NodeName, g.Node)
		}
	}
	for name := range gone {
		if !got.ended["default/"+name] {
			t.Errorf("deleted pod %s has no delete in the log", name)
		}
	}
	t.Logf("import: %d nodes, %d pods, %d binds (%d GPU sets assigned by the rule), %d deleted between dumps, %d refused by the model, %d waiting",
		rep.Nodes, rep.Pods, rep.Binds, rep.GPUIndexAssigned, len(rep.DeletedBetweenDumps), len(rep.Refused), rep.Waiting)

	// A second, independent history on the same nodes (every pod of the first removed): the
	// held-out log of docs/decision-log.md's cloning figure.
	zero := int64(0)
	if err := client.CoreV1().Pods("default").DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "pods removed", func() bool {
		l, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		return err == nil && len(l.Items) == 0
	})
	out3, err := kubetest.Submit(ctx, client, "default", p.Workload[400:700], time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	dump(t, ctx, client, filepath.Join(dir, "d3.json"))
	names = names[:0]
	for _, o := range out3 {
		if o.Bound {
			names = append(names, o.Task)
		}
	}
	deleteShare(t, ctx, client, names, 0.4)
	if _, err := kubetest.Submit(ctx, client, "default", p.Workload[700:800], time.Minute); err != nil {
		t.Fatal(err)
	}
	dump(t, ctx, client, filepath.Join(dir, "d4.json"))
	snaps = snaps[:0]
	for _, d := range []string{"d3.json", "d4.json"} {
		s, err := podlog.ReadDump(filepath.Join(dir, d))
		if err != nil {
			t.Fatal(err)
		}
		snaps = append(snaps, s)
	}
	var buf2 bytes.Buffer
	rep2, err := podlog.Import(snaps, &buf2, podlog.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := podlog.Replay(bytes.NewReader(buf2.Bytes())); err != nil || rep2.Pods != 400 {
		t.Fatalf("second history: %d pods, replay: %v", rep2.Pods, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cluster-2.jsonl"), buf2.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	pods, err = client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}

	live, err := podlog.ListLive(ctx, client, "test", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var lbuf bytes.Buffer
	lrep, err := podlog.Import([]podlog.Snapshot{live}, &lbuf, podlog.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := podlog.Replay(bytes.NewReader(lbuf.Bytes())); err != nil {
		t.Fatal(err)
	}
	if lrep.Pods != len(pods.Items) {
		t.Errorf("live import: %d pods, API server %d", lrep.Pods, len(pods.Items))
	}
}

func node(name string, gpus int64) corev1.Node {
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("256Gi"),
		kube.ResourceGPU: *resource.NewQuantity(gpus, resource.DecimalSI)}
	return corev1.Node{TypeMeta: metav1.TypeMeta{Kind: "Node", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(time.Unix(1000, 0))},
		Status:     corev1.NodeStatus{Allocatable: res, Capacity: res}}
}

func pod(name, nodeName string, created, scheduled int64) corev1.Pod {
	p := *kube.PodObject(sim.Task{CPU: 1000, Mem: 1024, NumGPU: 1, GPUMilli: 1000}, "default", name)
	p.TypeMeta = metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}
	p.UID = k8stypes.UID("uid-" + name)
	p.CreationTimestamp = metav1.NewTime(time.Unix(created, 0))
	p.Spec.NodeName = nodeName
	if nodeName != "" {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(time.Unix(scheduled, 0))}}
	}
	return p
}

// TestImportBadInput: a malformed pod in a dump, a pod bound to a node no dump lists, a clock
// that goes back, a pod that reappears: errors naming the file and the object, nothing written.
func TestImportBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, items ...any) string {
		data, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
		path := filepath.Join(dir, name)
		os.WriteFile(path, data, 0o644)
		return path
	}
	ok := pod("a", "n1", 2000, 2001)
	badAnnot := pod("half", "", 2000, 0)
	badAnnot.Annotations = map[string]string{kube.AnnotGPUMilli: "half"}
	early := pod("early", "n1", 2000, 1990)
	stray := pod("stray", "n9", 2000, 2001)
	for _, tc := range []struct {
		name  string
		dumps [][]any
		want  string
	}{
		{"malformed JSON", [][]any{{node("n1", 8), map[string]any{"kind": "Pod", "metadata": map[string]any{"name": "broken", "namespace": "default", "uid": 7}}}},
			`items[1] (Pod default/broken): json: cannot unmarshal number`},
		{"malformed GPU request", [][]any{{node("n1", 8), badAnnot}}, `pod default/half: annotation alibabacloud.com/gpu-milli "half": not an integer`},
		{"unseen node", [][]any{{node("n1", 8), stray}}, "pod default/stray: bound to node n9, which no dump lists"},
		{"clock goes back", [][]any{{node("n1", 8), early}}, "pod default/early: scheduled at 1970-01-01T00:33:10Z, before it was created at 1970-01-01T00:33:20Z: the clock goes back"},
		{"reappears", [][]any{{node("n1", 8), ok}, {node("n1", 8)}, {node("n1", 8), ok}}, "pod default/a (uid uid-a) is in"},
		{"not a list", nil, `kind "Pod", want a List`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var snaps []podlog.Snapshot
			var err error
			if tc.dumps == nil {
				path := filepath.Join(dir, "pod.json")
				data, _ := json.Marshal(ok)
				os.WriteFile(path, data, 0o644)
				_, err = podlog.ReadDump(path)
			}
			for i, items := range tc.dumps {
				var s podlog.Snapshot
				if s, err = podlog.ReadDump(write(tc.name+string(rune('0'+i))+".json", items...)); err != nil {
					break
				}
				snaps = append(snaps, s)
			}
			var buf bytes.Buffer
			if err == nil {
				_, err = podlog.Import(snaps, &buf, podlog.ImportOptions{})
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			if buf.Len() != 0 {
				t.Errorf("%d bytes written on error", buf.Len())
			}
		})
	}
}
