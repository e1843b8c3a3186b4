package extender_test

import (
	"context"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/schedrl/schedrl/internal/repotest"
	"github.com/schedrl/schedrl/internal/testserver"
	"github.com/schedrl/schedrl/kube"
	"github.com/schedrl/schedrl/kube/extender"
	"github.com/schedrl/schedrl/kube/kubetest"
	"github.com/schedrl/schedrl/policy"
	"github.com/schedrl/schedrl/sim"
)

const seed = 42

// experiment is the openb default trace on its 1,213 GPU nodes, tuned and shuffled with seed.
func experiment(t testing.TB) *sim.Prepared {
	t.Helper()
	p, err := sim.Prepare(sim.Experiment{NodesPath: repotest.OpenbNodes(), PodsPath: repotest.OpenbPods("default"),
		Tune: 1.3, Seed: seed, Coverage: 0.95})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// served is an extender running on loopback in front of a control plane.
type served struct {
	kube   *testserver.Kube
	server *extender.Server
	url    string
	timing *timing
}

// serve starts a control plane with nodes, the extender (FGD on the experiment's fragment
// model and tie seed) and, with scheduler, kube-scheduler calling it.
func serve(t testing.TB, nodes []sim.Node, model *sim.FragModel, scheduler bool) *served {
	t.Helper()
	k, err := testserver.StartKube()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := kubetest.RegisterNodes(ctx, k, nodes); err != nil {
		t.Fatal(err)
	}
	client, err := k.Client()
	if err != nil {
		t.Fatal(err)
	}
	mirror := kube.NewMirror(client, kube.MirrorOptions{Model: model, TieSeed: seed})
	if err := mirror.Start(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	placer, err := policy.NewPlacer("fgd")
	if err != nil {
		t.Fatal(err)
	}
	s := &served{kube: k, timing: &timing{}}
	s.server = extender.New(extender.Options{Client: client, Mirror: mirror, Placer: placer, Seed: seed, Model: "fgd"})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: s.timing.wrap(s.server.Handler()), ReadHeaderTimeout: 5 * time.Second}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	s.url = "http://" + ln.Addr().String()
	if !scheduler {
		return s
	}
	if err := k.StartScheduler(testserver.Extender{URL: s.url}); err != nil {
		t.Fatal(err)
	}
	return s
}

// timing records how long each extender verb took, as served to the real scheduler.
type timing struct {
	mu   sync.Mutex
	took map[string][]time.Duration
}

func (tm *timing) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		h.ServeHTTP(w, r)
		tm.mu.Lock()
		defer tm.mu.Unlock()
		if tm.took == nil {
			tm.took = map[string][]time.Duration{}
		}
		tm.took[r.URL.Path] = append(tm.took[r.URL.Path], time.Since(start))
	})
}

// p99 of one path's durations.
func (tm *timing) p99(path string) (time.Duration, int) {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	d := slices.Clone(tm.took[path])
	if len(d) == 0 {
		return 0, 0
	}
	slices.Sort(d)
	return d[min(len(d)-1, len(d)*99/100)], len(d)
}

// TestFGDMatchesSimulator is the acceptance run: 300 pods of the seeded openb default
// workload, created one by one against the real API server and bound by the real
// kube-scheduler through the extender running FGD, land on the nodes and GPUs `schedrl sim`
// picks for the same sequence with the same tie order; replaying what was bound in the
// simulator finds no over-committed GPU.
func TestFGDMatchesSimulator(t *testing.T) {
	p := experiment(t)
	tasks := p.Workload[:300]
	s := serve(t, p.Nodes, p.Model, true)
	client, err := s.kube.Client()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	start := time.Now()
	got, err := kubetest.Submit(ctx, client, "default", tasks, time.Minute)
	if err != nil {
		t.Fatalf("%v\n%s", err, s.kube.SchedulerLog())
	}
	wall := time.Since(start)
	fgd, _ := policy.NewPlacer("fgd")
	want, err := kubetest.Simulate(p, tasks, fgd)
	if err != nil {
		t.Fatal(err)
	}
	if d := kubetest.Diff(got, want, 10); len(d) > 0 {
		t.Fatalf("kube-scheduler + extender disagree with the simulator:\n%s", strings.Join(d, "\n"))
	}
	bound := 0
	for _, o := range got {
		if o.Bound {
			bound++
		}
	}
	if _, err := kubetest.Replay(ctx, client, p.Model); err != nil {
		t.Fatalf("bound pods do not replay in the simulator: %v", err)
	}
	f99, nf := s.timing.p99("/filter")
	p99, np := s.timing.p99("/prioritize")
	t.Logf("%d pods (%d bound) in %s; extender p99 filter %s (%d calls), prioritize %s (%d calls)", len(tasks), bound,
		wall.Round(time.Millisecond), f99, nf, p99, np)
}
