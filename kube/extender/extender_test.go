package extender_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/schedrl/schedrl/internal/repotest"
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
	f99, nf := s.Timing.P99("/filter")
	p99, np := s.Timing.P99("/prioritize")
	t.Logf("%d pods (%d bound) in %s; extender p99 filter %s (%d calls), prioritize %s (%d calls)", len(tasks), bound,
		wall.Round(time.Millisecond), f99, nf, p99, np)
}
