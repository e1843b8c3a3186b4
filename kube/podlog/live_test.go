package podlog_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/schedrl/schedrl/internal/repotest"
	"github.com/schedrl/schedrl/kube"
	"github.com/schedrl/schedrl/kube/kubetest"
	"github.com/schedrl/schedrl/kube/podlog"
	"github.com/schedrl/schedrl/policy"
	"github.com/schedrl/schedrl/sim"
)

const seed = 42

func experiment(t testing.TB) *sim.Prepared {
	t.Helper()
	p, err := sim.Prepare(sim.Experiment{NodesPath: repotest.OpenbNodes(), PodsPath: repotest.OpenbPods("default"),
		Tune: 1.3, Seed: seed, Coverage: 0.95})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// logged is what a set of decision log files say happened to each task.
type logged struct {
	arrived map[string]bool
	bound   map[string]kubetest.Outcome // decisions (bind) and carried state (start)
	ended   map[string]bool
	binds   int
	carried int
}

// readLogs replays every file (each must replay on its own) and collects what they say.
func readLogs(t *testing.T, files []string) logged {
	t.Helper()
	out := logged{arrived: map[string]bool{}, bound: map[string]kubetest.Outcome{}, ended: map[string]bool{}}
	for _, path := range files {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := podlog.Replay(f); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		f.Seek(0, io.SeekStart)
		lr, err := sim.NewLogReader(f)
		if err != nil {
			t.Fatal(err)
		}
		if lr.Header.Version != sim.LogVersionTimed {
			t.Fatalf("%s: version %d", path, lr.Header.Version)
		}
		for {
			ev, err := lr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			switch ev.Type {
			case sim.EvArrive:
				out.arrived[ev.Task] = true
				delete(out.ended, ev.Task)
			case sim.EvBind, sim.EvStart:
				out.bound[ev.Task] = kubetest.Outcome{Task: ev.Task, Bound: true, Node: ev.Node, GPUs: sim.NewGPUSet(ev.GPUs...)}
				if ev.Type == sim.EvBind {
					out.binds++
				} else {
					out.carried++
				}
			case sim.EvDelete, sim.EvComplete:
				out.ended[ev.Task] = true
			}
		}
		f.Close()
	}
	return out
}

// deleteShare deletes a seeded share of the bound pods at once (grace 0) and returns them.
func deleteShare(t *testing.T, ctx context.Context, client kubernetes.Interface, names []string, share float64) map[string]bool {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	perm := rng.Perm(len(names))
	gone := map[string]bool{}
	zero := int64(0)
	for _, i := range perm[:int(share*float64(len(names)))] {
		if err := client.CoreV1().Pods("default").Delete(ctx, names[i], metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Fatal(err)
		}
		gone[names[i]] = true
	}
	return gone
}

// waitFor polls cond until it holds or the generous deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached within 3 minutes", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestLiveLogMatchesCluster is the acceptance run of the extender's decision log: 300 openb
// pods placed by kube-scheduler with the FGD extender, 40% of them deleted, 100 more; the
// log (rotated into several files) replays, and its arrivals, placements and departures are
// the API server's pods one by one; `schedrl sim`'s placer on the same sequence with the same
// seed places every pod where the log says. A second log started and cut off mid-line is
// closed by the next start (its complete lines kept), which begins with a fresh header
// carrying the pods the cluster has.
func TestLiveLogMatchesCluster(t *testing.T) {
	p := experiment(t)
	s := kubetest.Serve(t, p.Nodes, p.Model, seed, true)
	client, err := s.Kube.Client()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := t.TempDir()
	live, err := podlog.StartLive(ctx, podlog.LiveOptions{Client: client, Dir: dir, Model: p.Model, TieSeed: seed,
		MaxBytes: 48 << 10, Meta: map[string]string{"policy": "fgd"}})
	if err != nil {
		t.Fatal(err)
	}
	first, second := p.Workload[:300], p.Workload[300:400]
	out1, err := kubetest.Submit(ctx, client, "default", first, time.Minute)
	if err != nil {
		t.Fatalf("%v\n%s", err, s.Kube.SchedulerLog())
	}
	var names []string
	for _, o := range out1 {
		if o.Bound {
			names = append(names, o.Task)
		}
	}
	gone := deleteShare(t, ctx, client, names, 0.4)
	out2, err := kubetest.Submit(ctx, client, "default", second, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	bound := len(names)
	for _, o := range out2 {
		if o.Bound {
			bound++
		}
	}
	// The log follows its own informers: wait until it has seen every change, by its metrics.
	var last map[string]int
	defer func() {
		if t.Failed() {
			t.Logf("log events %v, want %d binds, %d deletions", last, bound, len(gone))
		}
	}()
	waitFor(t, "log sees 400 arrivals, the binds and the deletions", func() bool {
		c := live.Events()
		last = c
		return c[sim.EvArrive] == 400 && c[sim.EvBind] == bound && c[sim.EvDelete] == len(gone)
	})
	if err := live.Close(); err != nil {
		t.Fatal(err)
	}
	files := live.Files()
	if len(files) < 2 {
		t.Fatalf("%d files, want rotation at 48 KiB into several", len(files))
	}
	got := readLogs(t, files)
	if got.binds != bound {
		t.Errorf("%d binds logged, %d pods bound", got.binds, bound)
	}
	pods, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	inAPI := map[string]bool{}
	mismatch := 0
	for _, pod := range pods.Items {
		name := kube.TaskName(&pod)
		inAPI[pod.Name] = true
		gpus, _ := kube.ParseGPUIndex(pod.Annotations[kube.AnnotGPUIndex])
		want := kubetest.Outcome{Task: name, Bound: pod.Spec.NodeName != "", Node: pod.Spec.NodeName, GPUs: gpus}
		if g := got.bound[name]; g != want && (want.Bound || g.Bound) {
			if mismatch++; mismatch < 5 {
				t.Errorf("pod %s: API server %+v, log %+v", name, want, g)
			}
		}
		if !got.arrived[name] || got.ended[name] {
			t.Errorf("pod %s: log arrived %v ended %v, want arrived and not ended", name, got.arrived[name], got.ended[name])
		}
	}
	for name := range gone {
		if inAPI[name] || !got.ended["default/"+name] {
			t.Errorf("deleted pod %s: in API %v, log ended %v", name, inAPI[name], got.ended["default/"+name])
		}
	}
	// The same sequence in the simulator: FGD, the seeded tie order and policy stream, the same
	// deletions between the two batches.
	c, err := p.NewCluster()
	if err != nil {
		t.Fatal(err)
	}
	fgd, _ := policy.NewPlacer("fgd")
	rng := sim.RNG(seed, sim.StreamPolicy)
	if _, err := sim.RunArrivals(c, first, fgd, rng, nil); err != nil {
		t.Fatal(err)
	}
	simAt := map[string]kubetest.Outcome{}
	record := func(tasks []sim.Task) {
		for _, tk := range tasks {
			if pl, ok := c.Placement(tk.Name); ok {
				simAt["default/"+tk.Name] = kubetest.Outcome{Task: "default/" + tk.Name, Bound: true, Node: c.Node(pl.Choice.Node).Name, GPUs: pl.Choice.GPUs}
			}
		}
	}
	record(first)
	for name := range gone {
		if _, err := c.Remove(name); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := sim.RunArrivals(c, second, fgd, rng, nil); err != nil {
		t.Fatal(err)
	}
	record(second)
	differ := 0
	for name, w := range simAt {
		if got.bound[name] != w {
			if differ++; differ < 5 {
				t.Errorf("%s: sim %+v, log %+v", name, w, got.bound[name])
			}
		}
	}
	if len(simAt) != bound {
		t.Errorf("sim placed %d, cluster bound %d", len(simAt), bound)
	}
	t.Logf("%d files; %d arrivals, %d binds, %d deletions; %d pods in the API server; sim placements equal: %d of %d",
		len(files), len(got.arrived), got.binds, len(gone), len(pods.Items), len(simAt)-differ, len(simAt))

	// A restart after a crash: a log whose process stopped mid-line.
	crashCtx, crash := context.WithCancel(ctx)
	dir2 := filepath.Join(dir, "restart")
	_, err = podlog.StartLive(crashCtx, podlog.LiveOptions{Client: client, Dir: dir2, Model: p.Model, TieSeed: seed})
	if err != nil {
		t.Fatal(err)
	}
	crash()
	open, _ := filepath.Glob(filepath.Join(dir2, ".decisions-*"))
	if len(open) != 1 {
		t.Fatalf("open files %v, want one", open)
	}
	f, err := os.OpenFile(open[0], os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprint(f, `{"seq":99999,"type":"arr`)
	f.Close()
	next, err := podlog.StartLive(ctx, podlog.LiveOptions{Client: client, Dir: dir2, Model: p.Model, TieSeed: seed})
	if err != nil {
		t.Fatal(err)
	}
	if err := next.Close(); err != nil {
		t.Fatal(err)
	}
	closed, _ := filepath.Glob(filepath.Join(dir2, "decisions-*.jsonl"))
	left, _ := filepath.Glob(filepath.Join(dir2, ".decisions-*"))
	if len(closed) != 2 || len(left) != 0 {
		t.Fatalf("after restart: closed %v, left open %v; want the recovered file and the new one", closed, left)
	}
	for _, path := range closed {
		r := readLogs(t, []string{path})
		if r.carried != len(pods.Items) || r.binds != 0 {
			t.Errorf("%s: carried %d, binds %d; want the %d pods the cluster has as state", path, r.carried, r.binds, len(pods.Items))
		}
		data, _ := os.ReadFile(path)
		if strings.Contains(string(data), `"arr`+"\n") || !strings.HasSuffix(string(data), "\n") {
			t.Errorf("%s: the cut line survived", path)
		}
	}
}
