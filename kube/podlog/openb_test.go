package podlog_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/schedrl/schedrl/kube/podlog"
	"github.com/schedrl/schedrl/sim"
)

// TestImportOpenbLists: two dumps whose pods complete, are deleted between the dumps, stay
// running, stay waiting, and reuse a name become an openb pod list and node list that the
// simulator's readers accept, one row per pod of the log with its times in whole seconds from
// the first event; the lists are written only with a log that replays.
func TestImportOpenbLists(t *testing.T) {
	done := pod("done", "n1", 2000, 2001)
	done.Status.Phase = corev1.PodFailed
	done.Status.QOSClass = corev1.PodQOSBurstable
	done.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", State: corev1.ContainerState{
		Terminated: &corev1.ContainerStateTerminated{FinishedAt: metav1.NewTime(time.Unix(2100, 0))}}}}
	gone := pod("gone", "n1", 2002, 2003)
	running := pod("running", "n1", 2010, 2012)
	waiting := pod("waiting", "", 2020, 0)
	again := pod("gone", "n1", 2150, 2151) // the name of a deleted pod, reused
	again.UID = k8stypes.UID("uid-gone-2")
	later := waiting
	later.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, LastTransitionTime: metav1.NewTime(time.Unix(2200, 0))}}
	n1 := node("n1", 8)
	n1.Labels = map[string]string{"alibabacloud.com/gpu-card-model": "V100"}
	snaps := []podlog.Snapshot{
		{Source: "d1", Nodes: []corev1.Node{n1, node("n2", 4)}, Pods: []corev1.Pod{done, gone, running, waiting}},
		{Source: "d2", Nodes: []corev1.Node{n1, node("n2", 4)}, Pods: []corev1.Pod{done, running, later, again}},
	}
	var log, pods, nodes bytes.Buffer
	rep, err := podlog.Import(snaps, &log, podlog.ImportOptions{PodList: &pods, NodeList: &nodes})
	if err != nil {
		t.Fatal(err)
	}
	wantPods := "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n" +
		"default/done,1000,1024,1,1000,,Burstable,Failed,0,100,1\n" +
		"default/gone,1000,1024,1,1000,,,Running,2,100,3\n" +
		"default/running,1000,1024,1,1000,,,Running,10,200,12\n" +
		"default/waiting,1000,1024,1,1000,,,Pending,20,200,\n" +
		"default/gone#2,1000,1024,1,1000,,,Running,150,200,151\n"
	if pods.String() != wantPods {
		t.Errorf("pod list:\n%s\nwant:\n%s", pods.String(), wantPods)
	}
	wantNodes := "sn,cpu_milli,memory_mib,gpu,model\nn1,64000,262144,8,V100\nn2,64000,262144,4," + podlog.UnlabelledModel + "\n"
	if nodes.String() != wantNodes {
		t.Errorf("node list:\n%s\nwant:\n%s", nodes.String(), wantNodes)
	}
	if o := rep.Openb; o.Pods != 5 || o.Nodes != 2 || o.Running != 2 || o.Waiting != 1 || o.Span != 200 {
		t.Errorf("report %+v, want 5 pods, 2 nodes, 2 running and 1 waiting at the end, 200 s", o)
	}
	dir := t.TempDir()
	pp, np := filepath.Join(dir, "pods.csv"), filepath.Join(dir, "nodes.csv")
	os.WriteFile(pp, pods.Bytes(), 0o644)
	os.WriteFile(np, nodes.Bytes(), 0o644)
	tasks, err := sim.LoadTasks(pp)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sim.LoadNodes(np); err != nil {
		t.Fatal(err)
	}
	if len(tasks) != rep.Pods || tasks[0].Scheduled != 1 || tasks[3].Scheduled != -1 || tasks[4].Deletion != 200 {
		t.Errorf("read back %d tasks (%+v), want %d", len(tasks), tasks, rep.Pods)
	}

	stray := pod("stray", "n9", 2000, 2001)
	var l2, p2, n2 bytes.Buffer
	_, err = podlog.Import([]podlog.Snapshot{{Source: "d3", Nodes: []corev1.Node{n1}, Pods: []corev1.Pod{stray}}}, &l2, podlog.ImportOptions{PodList: &p2, NodeList: &n2})
	if err == nil || !strings.Contains(err.Error(), "d3: pod default/stray: bound to node n9") || l2.Len()+p2.Len()+n2.Len() != 0 {
		t.Errorf("error %v, %d+%d+%d bytes written", err, l2.Len(), p2.Len(), n2.Len())
	}
}
