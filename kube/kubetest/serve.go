package kubetest

import (
	"context"
	"net"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/schedrl/schedrl/internal/testserver"
	"github.com/schedrl/schedrl/kube"
	"github.com/schedrl/schedrl/kube/extender"
	"github.com/schedrl/schedrl/policy"
	"github.com/schedrl/schedrl/sim"
)

// Served is an extender (FGD) running on loopback in front of a control plane.
type Served struct {
	Kube   *testserver.Kube
	Server *extender.Server
	Mirror *kube.Mirror
	URL    string
	Timing *Timing
}

// Serve starts a control plane with nodes, the extender (FGD with the fragment model, tie
// order and policy stream of seed) and, with scheduler, kube-scheduler calling it. Everything
// stops when the test ends.
func Serve(t testing.TB, nodes []sim.Node, model *sim.FragModel, seed uint64, scheduler bool) *Served {
	t.Helper()
	k, err := testserver.StartKube()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := RegisterNodes(ctx, k, nodes); err != nil {
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
	s := &Served{Kube: k, Mirror: mirror, Timing: &Timing{}}
	s.Server = extender.New(extender.Options{Client: client, Mirror: mirror, Placer: placer, Seed: seed, Model: "fgd"})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: s.Timing.wrap(s.Server.Handler()), ReadHeaderTimeout: 5 * time.Second}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	s.URL = "http://" + ln.Addr().String()
	if !scheduler {
		return s
	}
	if err := k.StartScheduler(testserver.Extender{URL: s.URL}); err != nil {
		t.Fatal(err)
	}
	return s
}

// Timing records how long each extender request took, by path, as served.
type Timing struct {
	mu   sync.Mutex
	took map[string][]time.Duration
}

func (tm *Timing) wrap(h http.Handler) http.Handler {
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

// Quantile is the q-quantile (0..1) of one path's durations and how many there were.
func (tm *Timing) Quantile(path string, q float64) (time.Duration, int) {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	d := slices.Clone(tm.took[path])
	if len(d) == 0 {
		return 0, 0
	}
	slices.Sort(d)
	return d[min(len(d)-1, int(q*float64(len(d))))], len(d)
}
