package fungible

import (
	"strings"
	"testing"

	"github.com/schedrl/schedrl/jobs"
)

func mustPolicy(t testing.TB, name string) jobs.Policy {
	t.Helper()
	p, err := jobs.NewPolicy(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRunReplaysWithoutOverCommit runs every rule on generated multi-GPU jobs over the real data,
// busy enough that jobs wait, share and get shrunk, and replays each log into a fresh ledger,
// recounting every server after every event (checkCapacity) independently of the ledger.
func TestRunReplaysWithoutOverCommit(t *testing.T) {
	m := gavelModel(t)
	c := mixCluster(t, "12:12:12")
	work, err := Generate(m.Tput, m.Sens.JobTypes(), WorkloadConfig{Jobs: 60, Interarrival: 300, MultiGPU: true, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range RuleNames() {
		rule, _ := LookupRule(name)
		res, err := Run(c, m, work, RunConfig{Rule: rule, Order: mustPolicy(t, "tiresias-las"), Log: true})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		shared, resized := false, false
		for _, e := range res.Log {
			shared = shared || (e.Op == Start && e.Alloc.Partner != NoPartner)
			resized = resized || e.Op == Resize
		}
		if err := Replay(c, res.Log, func(l *Ledger) { checkCapacity(t, l) }); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for i, jct := range res.JCT {
			if !(jct > 0) {
				t.Fatalf("%s: job %d JCT %g", name, i, jct)
			}
		}
		t.Logf("%s: avg JCT %.0f s, makespan %.0f s, utilization %.3f, %d rounds, shared %v, resized %v", name, res.AvgJCT, res.Makespan, res.Utilization, res.Rounds, shared, resized)
		if name == "gandiva" && !shared {
			t.Errorf("gandiva never packed a pair: the replay did not see sharing")
		}
		if name == "synergy-tune" && !resized {
			t.Errorf("synergy-tune never shrank a job: the replay did not see resizes")
		}
	}
}

// TestReplayNamesTheOverCommittedServer: a log that starts a job on a GPU already held fails,
// naming the event, the server and the resource.
func TestReplayNamesTheOverCommittedServer(t *testing.T) {
	c := mixCluster(t, "8:0:0")
	a := Allocation{Job: 1, JobType: res18, GPUType: "v100", Parts: []Part{{0, []int{0, 1}}}, CPUsPerGPU: 3, MemPerGPU: 62.5, Partner: NoPartner}
	b := a
	b.Job, b.Parts, b.CPUsPerGPU = 2, []Part{{0, []int{2, 3, 4, 5, 6, 7}}}, 3.5
	log := []Event{{0, Change{Op: Start, Alloc: a}}, {0, Change{Op: Start, Alloc: b}}}
	err := Replay(c, log, nil)
	if err == nil || !strings.Contains(err.Error(), "event 1 at 0 s (start job 2): server v100-00: cpu") {
		t.Fatalf("error %v, want event 1, server v100-00 and cpu named", err)
	}
}

// TestRunTuneNeverBelowFairShare: in a whole run with the real data, every allocation TUNE makes
// or shrinks to holds at least min(best case, fair share) of CPUs and memory per GPU.
func TestRunTuneNeverBelowFairShare(t *testing.T) {
	m := gavelModel(t)
	c := mixCluster(t, "12:12:12")
	work, err := Generate(m.Tput, m.Sens.JobTypes(), WorkloadConfig{Jobs: 80, Interarrival: 200, MultiGPU: true, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(c, m, work, RunConfig{Rule: Tune, Order: mustPolicy(t, "fifo"), Log: true})
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, e := range res.Log {
		if e.Op == Release {
			continue
		}
		prof, err := m.Sens.Profile(e.Alloc.JobType)
		if err != nil {
			t.Fatal(err)
		}
		fc, fm := c.FairShare(e.Alloc.GPUType)
		if e.Alloc.CPUsPerGPU < min(prof.BestCPUs, fc) || e.Alloc.MemPerGPU < min(prof.BestMem, fm) {
			t.Fatalf("at %g s job %d (%s) holds %g CPUs and %g GB per GPU, below min(best, fair) = (%g, %g)", e.Time, e.Alloc.Job, e.Alloc.JobType, e.Alloc.CPUsPerGPU, e.Alloc.MemPerGPU, min(prof.BestCPUs, fc), min(prof.BestMem, fm))
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no allocation in the log")
	}
}

// TestRunLoneJobFinishesAtItsSpeed: one job alone runs at the product of its factors, so its JCT
// is its steps over that speed, whatever the round length.
func TestRunLoneJobFinishesAtItsSpeed(t *testing.T) {
	m := gavelModel(t)
	c := mixCluster(t, "8:0:0")
	work := []Job{{ID: 7, Type: res50, GPUs: 2, Steps: 100000, Arrival: 50}}
	res, err := Run(c, m, work, RunConfig{Rule: Tune, Order: mustPolicy(t, "fifo"), Round: 120, Log: true})
	if err != nil {
		t.Fatal(err)
	}
	a := res.Log[0].Alloc
	s, err := m.Speed(a, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := 100000 / s; !approx(res.JCT[0], want) || !approx(res.Makespan, 50+want) {
		t.Fatalf("JCT %g, makespan %g, want %g and %g (speed %g on %+v)", res.JCT[0], res.Makespan, want, 50+want, s, a)
	}
	if !approx(res.Utilization, 2*(100000/s)/8/(50+100000/s)) {
		t.Errorf("utilization %g", res.Utilization)
	}
}

// TestRunPairSwitchesToAloneWhenThePartnerFinishes: two 1-GPU jobs packed on one GPU run at the
// paired speeds; the longer one runs on alone after the shorter finishes.
func TestRunPairSwitchesToAloneWhenThePartnerFinishes(t *testing.T) {
	tab := newTable().setAlone("v100", a3c, 1, 7).setAlone("v100", lm, 1, 60).
		setPair("v100", a3c, lm, 1, 6.5, 57)
	m := SpeedModel{Tput: tab, Sens: loadSensitivity(t)}
	c := Cluster{{Name: "v-0", GPUType: "v100", GPUs: 1, CPUs: 3, MemGB: 62.5}}
	work := []Job{{ID: 0, Type: a3c, GPUs: 1, Steps: 6000, Arrival: 0}, {ID: 1, Type: lm, GPUs: 1, Steps: 75000, Arrival: 0}}
	res, err := Run(c, m, work, RunConfig{Rule: Gandiva, Order: mustPolicy(t, "fifo"), Round: 3600, Log: true})
	if err != nil {
		t.Fatal(err)
	}
	// The log: job 0 starts, is shrunk to half its CPUs and memory, job 1 joins it.
	a0, a1 := res.Log[1].Alloc, res.Log[2].Alloc
	if res.Log[1].Op != Resize || a1.Partner != 0 {
		t.Fatalf("log %+v: want job 1 packed with job 0", res.Log[:3])
	}
	a0.Partner = 1
	// Gandiva halves the CPUs and memory: both speeds scale by their profiles' factors there.
	f0, _ := m.Factors(a0, &a1)
	f1, _ := m.Factors(a1, &a0)
	t0 := 6000 / f0.Speed()
	alone1, _ := m.Speed(a1, nil)
	t1 := t0 + (float64(work[1].Steps)-f1.Speed()*t0)/alone1
	if !approx(res.JCT[0], t0) || !approx(res.JCT[1], t1) {
		t.Fatalf("JCTs %v, want %g (paired) and %g (paired, then alone)", res.JCT, t0, t1)
	}
}

func TestRunRejectsBadWork(t *testing.T) {
	m := gavelModel(t)
	c := mixCluster(t, "8:0:0")
	fifo := mustPolicy(t, "fifo")
	for want, work := range map[string][]Job{
		`job type "Mystery" has no Synergy mapping`:                       {{ID: 1, Type: "Mystery", GPUs: 1, Steps: 10}},
		`job 2: no throughput for "ResNet-50 (batch size 64)" on 16 GPUs`: {{ID: 2, Type: res50, GPUs: 16, Steps: 10}},
		"job 3: ID repeated": {{ID: 3, Type: res50, GPUs: 1, Steps: 10}, {ID: 3, Type: res50, GPUs: 1, Steps: 10}},
	} {
		if _, err := Run(c, m, work, RunConfig{Rule: Fixed, Order: fifo}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want %q", err, want)
		}
	}
}
