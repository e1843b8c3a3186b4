package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/schedrl/schedrl/internal/testcert"
	"github.com/schedrl/schedrl/internal/testserver"
	"github.com/schedrl/schedrl/kube"
	"github.com/schedrl/schedrl/kube/descheduler"
	"github.com/schedrl/schedrl/kube/kubetest"
	"github.com/schedrl/schedrl/policy"
	"github.com/schedrl/schedrl/sim"
)

// nodeCluster is a control plane with one real node on which deploy/k8s is installed from
// schedrl's own image, as docs/deploy.md installs it.
type nodeCluster struct {
	kube   *testserver.Kube
	node   *testserver.Node
	client kubernetes.Interface
}

// deployDir is deploy/k8s, the installation (kustomization.yaml and its manifests).
const deployDir = "../../deploy/k8s"

// TestServeOnNode: schedrl's installation running as pods on a real node. One node serves
// every subtest: starting a kubelet and building the image are most of the time.
func TestServeOnNode(t *testing.T) {
	if os.Getenv("CGO_ENABLED") == "0" {
		t.Skip("runs in the cgo pass of make test: it builds schedrl's image, which links libtorch")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	start := time.Now()
	nc := startNodeCluster(ctx, t)
	// Before the installation, so the extender's and the scheduler's first lists hold them.
	p := openbNodes(ctx, t, nc.kube)
	nc.install(ctx, t)
	nc.waitDeployment(ctx, t, "schedrl-extender")
	nc.waitDeployment(ctx, t, "schedrl-scheduler")
	t.Logf("node, images, %d openb Node objects and installation ready in %s", len(p.Nodes), time.Since(start).Round(time.Second))
	if !t.Run("Extender", func(t *testing.T) { testExtenderPod(ctx, t, nc, p) }) {
		return
	}
	t.Run("Defrag", func(t *testing.T) { testDefragPod(ctx, t, nc) })
	t.Run("Retrain", func(t *testing.T) { testRetrainJob(ctx, t, nc) })
}

// startNodeCluster starts the control plane and a node, builds schedrl's image (`make image`'s
// commands) while the node starts, and imports it and kube-scheduler's.
func startNodeCluster(ctx context.Context, t *testing.T) *nodeCluster {
	t.Helper()
	ref := kustomizationImage(t)
	type built struct {
		archive string
		err     error
	}
	image, dir := make(chan built, 1), t.TempDir()
	go func() {
		archive, err := testserver.BuildImage(ctx, dir, ref)
		image <- built{archive, err}
	}()
	k, err := testserver.StartKube()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	n, err := k.StartNode(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Close)
	client, err := k.Client()
	if err != nil {
		t.Fatal(err)
	}
	nc := &nodeCluster{kube: k, node: n, client: client}
	// The default scheduler places schedrl's own pods; the second one, from deploy/k8s, only
	// the pods that name it.
	if err := k.StartScheduler(testserver.Extender{}); err != nil {
		t.Fatal(err)
	}
	if _, err := n.ImportKubeScheduler(ctx); err != nil {
		t.Fatal(err)
	}
	b := <-image
	if b.err != nil {
		t.Fatal(b.err)
	}
	if err := n.ImportImage(ctx, b.archive); err != nil {
		t.Fatal(err)
	}
	return nc
}

// kustomizationImage is the image deploy/k8s/kustomization.yaml installs, NAME:TAG, which
// `make image` names its image.
func kustomizationImage(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(deployDir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Images []struct{ NewName, NewTag string } `json:"images"`
	}
	if err := yaml.Unmarshal(data, &k); err != nil || len(k.Images) != 1 {
		t.Fatalf("kustomization.yaml images: %+v (%v)", k.Images, err)
	}
	return k.Images[0].NewName + ":" + k.Images[0].NewTag
}

// install is `kubectl apply -k` of an overlay on deploy/k8s/ (kustomize's own library builds
// it; each object is then applied server-side) plus the Secrets docs/deploy.md has the operator
// create: the extender's serving certificate for its Service name and the scheduler's client
// certificate, both from one CA.
func (nc *nodeCluster) install(ctx context.Context, t *testing.T) {
	t.Helper()
	abs, err := filepath.Abs(deployDir)
	if err != nil {
		t.Fatal(err)
	}
	overlay := t.TempDir()
	base, err := filepath.Rel(overlay, abs)
	if err != nil {
		t.Fatal(err)
	}
	// The overlay an operator would write for this cluster: schedrl's pods on the one node that
	// runs containers (the others are Node objects only), and the retrain Job sized to it.
	kustomization := fmt.Sprintf(`resources: [%s]
patches:
- target: {kind: Deployment}
  patch: |-
    - {op: add, path: /spec/template/spec/nodeSelector, value: {kubernetes.io/hostname: %[2]s}}
- target: {kind: CronJob}
  patch: |-
    - {op: add, path: /spec/jobTemplate/spec/template/spec/nodeSelector, value: {kubernetes.io/hostname: %[2]s}}
    - {op: replace, path: /spec/jobTemplate/spec/template/spec/containers/0/resources, value: {requests: {cpu: 100m, memory: 1Gi}}}
`, base, nc.node.Name)
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(kustomization), 0o644); err != nil {
		t.Fatal(err)
	}
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), overlay)
	if err != nil {
		t.Fatalf("kustomize %s: %v", overlay, err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(nc.kube.Config())
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	dyn, err := dynamic.NewForConfig(nc.kube.Config())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range resources.Resources() {
		data, err := r.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var o unstructured.Unstructured
		if err := o.UnmarshalJSON(data); err != nil {
			t.Fatal(err)
		}
		gvk := o.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Fatalf("%s %s: %v", gvk.Kind, o.GetName(), err)
		}
		var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if m.Scope.Name() == "namespace" {
			ns := o.GetNamespace()
			if ns == "" {
				ns = "default" // kubectl's namespace when the manifest names none
			}
			ri = dyn.Resource(m.Resource).Namespace(ns)
		}
		if _, err := ri.Patch(ctx, o.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: "kubectl"}); err != nil {
			t.Fatalf("apply %s %s: %v", gvk.Kind, o.GetName(), err)
		}
	}
	ca := testcert.NewCA(t, "schedrl")
	serving, servingKey := ca.ServerFor(t, "schedrl-extender", "schedrl-extender.schedrl.svc")
	clientCert, clientKey := ca.Client(t, "schedrl-scheduler")
	secret := func(name string, files map[string]string) {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "schedrl"}, Data: map[string][]byte{}}
		for key, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			s.Data[key] = data
		}
		if _, err := nc.client.CoreV1().Secrets("schedrl").Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	secret("schedrl-extender-tls", map[string]string{"tls.crt": serving, "tls.key": servingKey, "client-ca.crt": ca.File})
	secret("schedrl-scheduler-client-tls", map[string]string{"ca.crt": ca.File, "tls.crt": clientCert, "tls.key": clientKey})
}

// waitDeployment waits until every replica of a Deployment in schedrl is available.
func (nc *nodeCluster) waitDeployment(ctx context.Context, t *testing.T, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	var d *appsv1.Deployment
	var err error
	for {
		d, err = nc.client.AppsV1().Deployments("schedrl").Get(ctx, name, metav1.GetOptions{})
		if err == nil && d.Spec.Replicas != nil && d.Status.AvailableReplicas == *d.Spec.Replicas {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("deployment %s not available: %v %+v\n%s\nkubelet:\n%s", name, err, d.Status,
				nc.describe(context.Background(), "schedrl", "app.kubernetes.io/name="+name), nc.node.KubeletLog())
		case <-time.After(time.Second):
		}
	}
}

// describe is each selected pod's phase, container states and log, for failure messages.
func (nc *nodeCluster) describe(ctx context.Context, ns, selector string) string {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	pods, err := nc.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, p := range pods.Items {
		fmt.Fprintf(&b, "%s on %s: %s %+v %+v\n", p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.Conditions, p.Status.ContainerStatuses)
		log, err := nc.client.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{TailLines: ptr.To[int64](40)}).DoRaw(ctx)
		fmt.Fprintf(&b, "log (%v):\n%s\n", err, log)
	}
	return b.String()
}

// testExtenderPod: the extender Deployment of deploy/k8s (FGD, seed 42) and the second
// kube-scheduler that calls it through its Service place 300 openb pods that opt in
// (schedulerName) exactly where the simulator puts them. The simulator starts from the
// cluster the extender sees: the openb nodes plus the real node with schedrl's own pods.
func testExtenderPod(ctx context.Context, t *testing.T, nc *nodeCluster, p *sim.Prepared) {
	start := time.Now()
	tasks := p.Workload[:300]
	nodes, err := nc.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pods, err := nc.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := kube.ClusterOf(nodes.Items, pods.Items, p.Model)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetTieOrder(sim.SeededTieOrder(len(nodes.Items), p.Seed)); err != nil {
		t.Fatal(err)
	}
	placer, err := policy.NewPlacer("fgd")
	if err != nil {
		t.Fatal(err)
	}
	want, err := kubetest.SimulateOn(c, p.Seed, tasks, placer)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]kubetest.Outcome, 0, len(tasks))
	for _, task := range tasks {
		obj := kube.PodObject(task, "default", task.Name)
		obj.Spec.SchedulerName = "schedrl-scheduler"
		o, err := kubetest.SubmitPod(ctx, nc.client, obj, time.Minute)
		if err != nil {
			t.Fatalf("%v\nscheduler:\n%s\nextender:\n%s", err, nc.describe(ctx, "schedrl", "app.kubernetes.io/name=schedrl-scheduler"),
				nc.describe(ctx, "schedrl", "app.kubernetes.io/name=schedrl-extender"))
		}
		got = append(got, o)
	}
	if d := kubetest.Diff(got, want, 10); len(d) > 0 {
		t.Fatalf("the extender pod disagrees with the simulator:\n%s", strings.Join(d, "\n"))
	}
	if _, err := kubetest.Replay(ctx, nc.client, p.Model); err != nil {
		t.Fatalf("bound pods do not replay in the simulator: %v", err)
	}
	bound := 0
	for _, o := range got {
		if o.Bound {
			bound++
		}
	}
	t.Logf("%d of %d openb pods placed through the extender pod as the simulator places them (%d bound), %s",
		len(got), len(tasks), bound, time.Since(start).Round(time.Second))
}

// testDefragPod: the defrag controller Deployment of deploy/k8s, switched from its shipped dry
// run to --evict (as its header says), evicts through the Eviction API, with its own service
// account, from the openb pods the extender subtest bound: each migration it reports as
// evicted is a pod deleted by the API server, and no more than its --budget.
func testDefragPod(ctx context.Context, t *testing.T, nc *nodeCluster) {
	start := time.Now()
	deps := nc.client.AppsV1().Deployments("schedrl")
	d, err := deps.Get(ctx, "schedrl-defrag", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := &d.Spec.Template.Spec.Containers[0]
	budget := 0
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(a, "--budget="); ok {
			fmt.Sscan(v, &budget)
		}
	}
	if budget == 0 {
		t.Fatalf("defrag.yaml: no --budget in %v", c.Args)
	}
	// The first round runs as the controller starts; the shipped 10-minute interval keeps it to one here.
	c.Args = append(c.Args, "--evict")
	if _, err := deps.Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	var evicted []corev1.Event
	waitCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	for len(evicted) == 0 {
		events, err := nc.client.CoreV1().Events("default").List(waitCtx, metav1.ListOptions{FieldSelector: "reason=" + descheduler.ReasonEvicted})
		if err == nil {
			evicted = events.Items
		}
		if len(evicted) > 0 {
			break
		}
		select {
		case <-waitCtx.Done():
			t.Fatalf("no %s event from the defrag pod:\n%s", descheduler.ReasonEvicted,
				nc.describe(context.Background(), "schedrl", "app.kubernetes.io/name=schedrl-defrag"))
		case <-time.After(time.Second):
		}
	}
	// The round's evictions are all made before its report; let the rest of its events land.
	nc.waitDeployment(ctx, t, "schedrl-defrag")
	events, err := nc.client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "reason=" + descheduler.ReasonEvicted})
	if err != nil {
		t.Fatal(err)
	}
	evicted = events.Items
	if len(evicted) > budget {
		t.Fatalf("%d evictions, budget %d", len(evicted), budget)
	}
	for _, e := range evicted {
		if e.Source.Component != descheduler.Component {
			t.Errorf("event %s from %q, want %s", e.Name, e.Source.Component, descheduler.Component)
		}
		err := waitEvicted(ctx, nc.client, e.InvolvedObject.Namespace, e.InvolvedObject.Name)
		if err != nil {
			t.Errorf("evicted pod %s/%s: %v", e.InvolvedObject.Namespace, e.InvolvedObject.Name, err)
		}
	}
	t.Logf("the defrag pod evicted %d pods (budget %d) through the Eviction API, %s", len(evicted), budget,
		time.Since(start).Round(time.Second))
}

// waitEvicted waits until a pod is deleted or being deleted: a pod bound to one of the Node
// objects without a kubelet keeps its grace period's Terminating state, since no kubelet
// confirms it stopped.
func waitEvicted(ctx context.Context, client kubernetes.Interface, ns, name string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		p, err := client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || err == nil && p.DeletionTimestamp != nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not deleted after a minute (last error %v)", err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// testRetrainJob: a Job made from the retrain CronJob by hand (what `kubectl create job
// --from=cronjob/schedrl-retrain` posts) runs the smoke pipeline from the image on the node,
// its stage cache on a PersistentVolume, to completion, and publishes to MinIO. The operator's
// part: the Secret with the registry settings, the config in the ConfigMap, and a volume for
// the claim (no provisioner here: a hostPath PersistentVolume).
func testRetrainJob(ctx context.Context, t *testing.T, nc *nodeCluster) {
	start := time.Now()
	store, err := testserver.StartMinIOOn(nc.node.HostIP)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	const bucket = "retrain"
	if err := store.MakeBucket(bucket); err != nil {
		t.Fatal(err)
	}
	core := nc.client.CoreV1()
	if _, err := core.Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "schedrl-retrain"},
		StringData: map[string]string{
			"SCHEDRL_REGISTRY_STORE":         "s3://" + bucket + "/node",
			"SCHEDRL_REGISTRY_S3_ENDPOINT":   store.Endpoint,
			"SCHEDRL_REGISTRY_S3_ACCESS_KEY": store.AccessKey,
			"SCHEDRL_REGISTRY_S3_SECRET_KEY": store.SecretKey,
			"SCHEDRL_REGISTRY_TRACKING_URI":  "",
		}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cm, err := core.ConfigMaps("default").Get(ctx, "schedrl-retrain", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["RETRAIN_CONFIG"] = "configs/smoke.yaml"
	if _, err := core.ConfigMaps("default").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	claim, err := core.PersistentVolumeClaims("default").Get(ctx, "schedrl-retrain", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	volume := t.TempDir()
	if err := os.Chown(volume, 65532, 65532); err != nil {
		t.Fatal(err)
	}
	if _, err := core.PersistentVolumes().Create(ctx, &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "schedrl-retrain-" + nc.node.Name},
		Spec: corev1.PersistentVolumeSpec{Capacity: claim.Spec.Resources.Requests, AccessModes: claim.Spec.AccessModes,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: volume}}}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cron, err := nc.client.BatchV1().CronJobs("default").Get(ctx, "schedrl-retrain", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// kubectl create job --from=cronjob/schedrl-retrain retrain-now
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "retrain-now", Namespace: "default",
			Annotations:     map[string]string{"cronjob.kubernetes.io/instantiate": "manual"},
			Labels:          cron.Spec.JobTemplate.Labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cron, batchv1.SchemeGroupVersion.WithKind("CronJob"))}},
		Spec: cron.Spec.JobTemplate.Spec,
	}
	if _, err := nc.client.BatchV1().Jobs("default").Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitCtx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	for {
		j, err := nc.client.BatchV1().Jobs("default").Get(waitCtx, "retrain-now", metav1.GetOptions{})
		if err == nil && j.Status.Succeeded > 0 {
			break
		}
		if err == nil && j.Status.Failed > 0 || waitCtx.Err() != nil {
			t.Fatalf("retrain job: %v %+v\n%s", err, j.Status, nc.describe(context.Background(), "default", "job-name=retrain-now"))
		}
		select {
		case <-waitCtx.Done():
		case <-time.After(2 * time.Second):
		}
	}
	pods, err := core.Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "job-name=retrain-now"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName != nc.node.Name || p.Status.Phase != corev1.PodSucceeded {
			t.Errorf("retrain pod %s on %q in phase %s, want Succeeded on %s", p.Name, p.Spec.NodeName, p.Status.Phase, nc.node.Name)
		}
	}
	mc, err := store.Client()
	if err != nil {
		t.Fatal(err)
	}
	var objects []string
	for o := range mc.ListObjects(ctx, bucket, minio.ListObjectsOptions{Prefix: "node/", Recursive: true}) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		objects = append(objects, o.Key)
	}
	if len(objects) == 0 {
		t.Fatalf("the retrain job published nothing to s3://%s/node/\n%s", bucket, nc.describe(ctx, "default", "job-name=retrain-now"))
	}
	t.Logf("retrain job from the CronJob completed on %s and published %d objects to MinIO, %s", nc.node.Name, len(objects),
		time.Since(start).Round(time.Second))
}
