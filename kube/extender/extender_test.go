package extender_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/schedrl/schedrl/internal/repotest"
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

// TestFGDMatchesSimulator is the acceptance run: 300 pods of the seeded openb default
// workload, created one by one against the real API server and bound by the real
// kube-scheduler through the extender running FGD, land on the nodes and GPUs `schedrl sim`
// picks for the same sequence with the same tie order; replaying what was bound in the
// simulator finds no over-committed GPU.
func TestFGDMatchesSimulator(t *testing.T) {
	p := experiment(t)
	tasks := p.Workload[:300]
	s := kubetest.Serve(t, p.Nodes, p.Model, seed, true)
	client, err := s.Kube.Client()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	start := time.Now()
	got, err := kubetest.Submit(ctx, client, "default", tasks, time.Minute)
	if err != nil {
		t.Fatalf("%v\n%s", err, s.Kube.SchedulerLog())
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
	for path, want := range map[string][]string{
		"/healthz": {"ok"},
		"/metrics": {`schedrl_extender_decisions_total{result="placed",verb="filter"} 300`,
			`schedrl_extender_decisions_total{result="bound",verb="bind"} 300`,
			`schedrl_extender_model_info{model="fgd",placer="fgd"} 1`, extender.LatencyMetric + `_bucket{verb="filter",le="0.005"}`},
	} {
		resp, err := http.Get(s.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, w := range want {
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), w) {
				t.Errorf("%s: status %d, no %q in:\n%s", path, resp.StatusCode, w, body)
			}
		}
	}
	f50, nf := s.Timing.Quantile("/filter", 0.5)
	f99, _ := s.Timing.Quantile("/filter", 0.99)
	p99, np := s.Timing.Quantile("/prioritize", 0.99)
	t.Logf("%d pods (%d bound) in %s; extender filter p50 %s p99 %s (%d calls), prioritize p99 %s (%d calls)", len(tasks), bound,
		wall.Round(time.Millisecond), f50, f99, nf, p99, np)
}
