package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sugarme/gotch"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/internal/repotest"
	"github.com/schedrl/schedrl/internal/testserver"
	"github.com/schedrl/schedrl/kube"
	"github.com/schedrl/schedrl/kube/descheduler"
	"github.com/schedrl/schedrl/kube/extender"
	"github.com/schedrl/schedrl/kube/kubetest"
	"github.com/schedrl/schedrl/kube/podlog"
	"github.com/schedrl/schedrl/nn"
	"github.com/schedrl/schedrl/registry"
	"github.com/schedrl/schedrl/sim"
)

// placementRegistry publishes a freshly initialised placement network as placement@1 with
// alias champion in a file registry, and returns the registry config and the checkpoint.
func placementRegistry(t *testing.T) (config.Config, string) {
	t.Helper()
	spec, err := env.SpecOf(env.PlacementName)
	if err != nil {
		t.Fatal(err)
	}
	var nc config.NetworkConfig
	nc.SetDefaults()
	nn.Seed(3)
	net, err := nn.NewNet(nn.NewArch(spec, nc, 50), gotch.CPU)
	if err != nil {
		t.Fatal(err)
	}
	ckpt := filepath.Join(t.TempDir(), "ckpt")
	if _, err := nn.SaveCheckpoint(ckpt, net, nn.Lineage{}); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Registry.Store = "file://" + t.TempDir()
	reg, err := registry.Open(cfg.Registry, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := reg.Publish(ctx, "placement", ckpt); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Promote(ctx, "placement@1", "champion"); err != nil {
		t.Fatal(err)
	}
	return cfg, ckpt
}

// TestServeExtenderRegistryModel: `schedrl serve extender --model placement@champion` pulls
// and verifies the checkpoint, and 300 seeded openb pods bound by the real kube-scheduler
// through it land where `schedrl sim` with the same checkpoint puts them.
func TestServeExtenderRegistryModel(t *testing.T) {
	cfg, ckpt := placementRegistry(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, k, opts := openbExtenderCluster(ctx, t, cfg)
	tasks := p.Workload[:300]
	ln := opts.Endpoint.Listener
	opts.decisionLogFlags = decisionLogFlags{LogDir: t.TempDir(), LogMaxBytes: 64 << 20, LogMaxAge: time.Hour}
	served := make(chan error, 1)
	go func() { served <- runServeExtender(ctx, &opts) }()
	if err := k.StartScheduler(testserver.Extender{URL: "http://" + ln.Addr().String()}); err != nil {
		t.Fatal(err)
	}
	client, err := k.Client()
	if err != nil {
		t.Fatal(err)
	}
	got, err := kubetest.Submit(ctx, client, "default", tasks, time.Minute)
	if err != nil {
		t.Fatalf("%v\n%s", err, k.SchedulerLog())
	}
	pol, err := nn.LoadPolicy(ckpt, gotch.CPU)
	if err != nil {
		t.Fatal(err)
	}
	want, err := kubetest.Simulate(p, tasks, pol.NewPlacer())
	if err != nil {
		t.Fatal(err)
	}
	if d := kubetest.Diff(got, want, 10); len(d) > 0 {
		t.Fatalf("extender with the registry model disagrees with the simulator:\n%s", strings.Join(d, "\n"))
	}
	if _, err := kubetest.Replay(ctx, client, p.Model); err != nil {
		t.Fatalf("bound pods do not replay in the simulator: %v", err)
	}
	cancel()
	if err := <-served; err != nil {
		t.Fatalf("serve extender: %v", err)
	}
	checkDecisionLog(t, opts.LogDir, "placement@1")
}

// checkDecisionLog: the extender stopped leaves one closed, content-addressed decision log
// that replays and names the model that decided.
func checkDecisionLog(t *testing.T, dir, model string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(files) != 1 || !strings.HasPrefix(filepath.Base(files[0]), "decisions-") {
		t.Fatalf("decision log folder holds %v, want one closed file", files)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := podlog.Replay(bytes.NewReader(data)); err != nil {
		t.Fatalf("%s: %v", files[0], err)
	}
	if !strings.Contains(string(data), `"model":"`+model) {
		t.Errorf("%s: header names no model %s", files[0], model)
	}
}

// TestServeExtenderModelPullFails: a model reference the registry does not have stops the
// command before it serves, with an error naming the reference.
func TestServeExtenderModelPullFails(t *testing.T) {
	cfg := config.Default()
	cfg.Registry.Store = "file://" + t.TempDir()
	opts := serveExtenderOptions{workloadFlags: workloadFlags{Pods: repotest.OpenbPods("default"), Coverage: 0.95},
		Endpoint: extender.Endpoint{Listen: "127.0.0.1:0"}, Model: "placement@champion", Config: cfg, Log: slog.Default()}
	err := runServeExtender(context.Background(), &opts)
	if err == nil || !strings.Contains(err.Error(), "model placement@champion: pull") {
		t.Fatalf("err = %v, want a pull error naming placement@champion", err)
	}
}

// TestServeDefragRegistryModelDryRun: `schedrl serve defrag --model defrag@champion --once`
// pulls the defrag agent from the registry, plans on a real API server's pods, and in dry-run
// evicts nothing: it reports its migrations as DefragPlanned Events, and no other kind. A
// reference the registry lacks stops it with the reference named.
func TestServeDefragRegistryModelDryRun(t *testing.T) {
	spec, err := env.SpecOf(env.DefragName)
	if err != nil {
		t.Fatal(err)
	}
	var nc config.NetworkConfig
	nc.SetDefaults()
	nn.Seed(5)
	dnet, err := nn.NewNet(nn.NewArch(spec, nc, 5), gotch.CPU)
	if err != nil {
		t.Fatal(err)
	}
	ckpt := filepath.Join(t.TempDir(), "defrag")
	if _, err := nn.SaveCheckpoint(ckpt, dnet, nn.Lineage{}); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Registry.Store = "file://" + t.TempDir()
	reg, err := registry.Open(cfg.Registry, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := reg.Publish(ctx, "defrag", ckpt); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Promote(ctx, "defrag@1", "champion"); err != nil {
		t.Fatal(err)
	}
	k, err := testserver.StartKube()
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	nodes := []sim.Node{{Name: "a", CPU: 64000, Mem: 262144, GPUs: 4, GPUType: "V100M16"}, {Name: "b", CPU: 64000, Mem: 262144, GPUs: 4, GPUType: "V100M16"}}
	if err := kubetest.RegisterNodes(ctx, k, nodes); err != nil {
		t.Fatal(err)
	}
	client, err := k.Client()
	if err != nil {
		t.Fatal(err)
	}
	// Half-used GPUs on both nodes: bound pods, as a scheduler would have left them.
	for i := range 6 {
		pod := kube.PodObject(sim.Task{CPU: 2000, Mem: 4096, NumGPU: 1, GPUMilli: 500}, "default", fmt.Sprintf("share-%d", i))
		pod.Spec.NodeName = nodes[i%2].Name
		pod.Annotations[kube.AnnotGPUIndex] = strconv.Itoa(i / 2)
		if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	kubeconfig, err := k.Kubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	opts := serveDefragOptions{
		kubeFlags:     kubeFlags{Kubeconfig: kubeconfig, QPS: 100, Burst: 200, APITimeout: 10 * time.Second, SyncTimeout: time.Minute},
		workloadFlags: workloadFlags{Pods: repotest.OpenbPods("default"), Coverage: 0.95, Seed: 42},
		Model:         "defrag@champion", Placer: "fgd", Budget: 3, Samples: 8, Interval: time.Minute, PerHour: 10,
		GracePeriod: -1, Once: true, Config: cfg, Log: slog.Default(),
	}
	if err := runServeDefrag(ctx, &opts); err != nil {
		t.Fatal(err)
	}
	pods, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	if err != nil || len(pods.Items) != 6 {
		t.Fatalf("dry run left %d pods of 6 (err %v)", len(pods.Items), err)
	}
	// Only the controller's own events: the API server reports its repairs (such as
	// ClusterIPNotAllocated) in the same namespace, whenever it runs them.
	events, err := client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "source=" + descheduler.Component})
	if err != nil {
		t.Fatal(err)
	}
	if len(events.Items) == 0 {
		t.Fatal("dry run reported no planned migration (the seeded agent plans 3 here)")
	}
	for _, e := range events.Items {
		if e.Reason != descheduler.ReasonPlanned {
			t.Errorf("dry run left a %s event on %s: %s", e.Reason, e.InvolvedObject.Name, e.Message)
		}
	}
	t.Logf("dry-run plan from defrag@champion: %d migrations reported as events", len(events.Items))

	opts.Model = "defrag@missing"
	if err := runServeDefrag(ctx, &opts); err == nil || !strings.Contains(err.Error(), "model defrag@missing: pull") {
		t.Fatalf("missing model: err %v", err)
	}
}

// openbNodes prepares the openb default workload (tune 1.3, seed 42), the extender's defaults
// (--pods, --coverage, --seed), and registers its nodes in k.
func openbNodes(ctx context.Context, t *testing.T, k *testserver.Kube) *sim.Prepared {
	t.Helper()
	p, err := sim.Prepare(sim.Experiment{NodesPath: repotest.OpenbNodes(), PodsPath: repotest.OpenbPods("default"),
		Tune: 1.3, Seed: 42, Coverage: 0.95})
	if err != nil {
		t.Fatal(err)
	}
	if err := kubetest.RegisterNodes(ctx, k, p.Nodes); err != nil {
		t.Fatal(err)
	}
	return p
}

// openbExtenderCluster prepares the openb default workload (tune 1.3, seed 42), starts a control
// plane with its nodes registered (closed when the test ends) and returns the options of an
// extender serving placement@champion from cfg's registry on a loopback listener.
func openbExtenderCluster(ctx context.Context, t *testing.T, cfg config.Config) (*sim.Prepared, *testserver.Kube, serveExtenderOptions) {
	t.Helper()
	k, err := testserver.StartKube()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	p := openbNodes(ctx, t, k)
	kubeconfig, err := k.Kubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return p, k, serveExtenderOptions{
		kubeFlags:     kubeFlags{Kubeconfig: kubeconfig, QPS: 500, Burst: 1000, APITimeout: 10 * time.Second, SyncTimeout: time.Minute},
		workloadFlags: workloadFlags{Pods: repotest.OpenbPods("default"), Coverage: 0.95, Seed: 42},
		Endpoint:      extender.Endpoint{Listener: ln}, Model: "placement@champion", Config: cfg, Log: slog.Default(),
	}
}
