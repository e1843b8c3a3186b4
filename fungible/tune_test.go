package fungible

import (
	"fmt"
	"reflect"
	"testing"
)

func queueOf(typ string, gpus int, ids ...int) []Job {
	out := make([]Job, len(ids))
	for i, id := range ids {
		out[i] = Job{ID: id, Type: typ, GPUs: gpus}
	}
	return out
}

// TestTuneStepsBestCaseFairShareThenShrink follows TUNE on one 8-GPU server (24 CPUs) with
// 1-GPU ResNet-18 jobs, whose best case is 9 CPUs per GPU.
func TestTuneStepsBestCaseFairShareThenShrink(t *testing.T) {
	m := SpeedModel{Tput: newTable().setAlone("v100", res18, 1, 30), Sens: loadSensitivity(t)}
	l := NewLedger(mixCluster(t, "8:0:0"))
	plan, err := Tune(l, m, queueOf(res18, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range plan.Changes {
		got = append(got, fmt.Sprintf("%s %d %g", c.Op, c.Alloc.Job, c.Alloc.CPUsPerGPU))
	}
	want := []string{
		"start 1 9", "start 2 9", // best case fits twice (18 CPUs)
		"start 3 3", "start 4 3", // then fair share (24)
		"resize 1 3", "start 5 3", // full: job 1 goes back to fair share to make room
		"start 6 3",               // 3 CPUs were left over
		"resize 2 3", "start 7 3", // job 2 shrinks for job 7
		"start 8 3", // job 9 waits: no GPU left
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("changes\n%v\nwant\n%v", got, want)
	}
	if len(l.Jobs()) != 0 {
		t.Error("Tune changed the ledger it was given")
	}
	checkCapacity(t, plan.Ledger)
}

// TestTuneNeverGivesLessThanFairShare runs TUNE over generated queues on the acceptance's cluster,
// round after round with jobs leaving, and checks every held job after every round.
func TestTuneNeverGivesLessThanFairShare(t *testing.T) {
	s := loadSensitivity(t)
	m := SpeedModel{Tput: syntheticTable(s.JobTypes()), Sens: s}
	for seed := range uint64(5) {
		queue, err := Generate(m.Tput, s.JobTypes(), WorkloadConfig{Jobs: 400, Interarrival: 60, MultiGPU: true, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		l := NewLedger(mixCluster(t, "36:36:36"))
		shrunk := 0
		for round := 0; round < 8; round++ {
			plan, err := Tune(l, m, queue)
			if err != nil {
				t.Fatal(err)
			}
			replay := l.Clone()
			for _, c := range plan.Changes {
				if err := replay.Do(c); err != nil {
					t.Fatalf("seed %d round %d: replaying the plan: %v", seed, round, err)
				}
				if c.Op == Resize {
					shrunk++
				}
			}
			l = plan.Ledger
			checkCapacity(t, l)
			for _, id := range l.Jobs() {
				a, _ := l.Get(id)
				if r, _ := replay.Get(id); !reflect.DeepEqual(r, a) {
					t.Fatalf("job %d: the plan's ledger holds %+v, its changes give %+v", id, a, r)
				}
				prof, _ := s.Profile(a.JobType)
				fc, fm := l.Cluster().FairShare(a.GPUType)
				if a.CPUsPerGPU < min(prof.BestCPUs, fc) || a.MemPerGPU < min(prof.BestMem, fm) {
					t.Fatalf("seed %d round %d: job %d (%s) holds %g CPUs and %g GB per GPU, below its fair share (%g, %g)",
						seed, round, id, a.JobType, a.CPUsPerGPU, a.MemPerGPU, min(prof.BestCPUs, fc), min(prof.BestMem, fm))
				}
			}
			// A third of the held jobs finish before the next round.
			for i, id := range l.Jobs() {
				if i%3 == round%3 {
					if err := l.Release(id); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		if shrunk == 0 {
			t.Fatalf("seed %d: no job was ever shrunk: the test does not reach TUNE's third step", seed)
		}
	}
}

func TestRulesNameBadInput(t *testing.T) {
	m := SpeedModel{Tput: newTable().setAlone("v100", res18, 1, 30).setAlone("v100", "Mystery", 1, 3), Sens: loadSensitivity(t)}
	l := NewLedger(mixCluster(t, "8:0:0"))
	for _, name := range RuleNames() {
		rule, err := LookupRule(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rule(l, m, queueOf(res18, 4, 1)); err == nil || !contains(err, `job 1: no throughput for "ResNet-18 (batch size 32)" on 4 GPUs`) {
			t.Errorf("%s: %v, want the missing throughput named", name, err)
		}
		if _, err := rule(l, m, queueOf("Mystery", 1, 2)); err == nil || !contains(err, `job 2: job type "Mystery" has no Synergy mapping`) {
			t.Errorf("%s: %v, want the unmapped job type named", name, err)
		}
	}
	if _, err := LookupRule("drf"); err == nil || !contains(err, `unknown allocation rule "drf" (have fixed, gandiva, integrated-greedy, synergy-tune, tune-scale)`) {
		t.Errorf("unknown rule: %v", err)
	}
}

// TestRulesNeverOverCommit runs every rule round after round over generated queues, jobs leaving
// between rounds: each plan's changes replay onto the ledger it was given, and no server is ever
// over-committed after any change.
func TestRulesNeverOverCommit(t *testing.T) {
	s := loadSensitivity(t)
	m := SpeedModel{Tput: syntheticTable(s.JobTypes()), Sens: s}
	for _, name := range RuleNames() {
		rule, _ := LookupRule(name)
		shared := 0
		for seed := range uint64(3) {
			queue, err := Generate(m.Tput, s.JobTypes(), WorkloadConfig{Jobs: 300, Interarrival: 60, MultiGPU: true, Seed: seed})
			if err != nil {
				t.Fatal(err)
			}
			l := NewLedger(mixCluster(t, "36:36:36"))
			for round := range 6 {
				plan, err := rule(l, m, queue)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if again, _ := rule(l, m, queue); !reflect.DeepEqual(again.Changes, plan.Changes) {
					t.Fatalf("%s seed %d round %d: the same ledger and queue gave another plan", name, seed, round)
				}
				for _, c := range plan.Changes {
					if err := l.Do(c); err != nil {
						t.Fatalf("%s seed %d round %d: replaying %s of job %d: %v", name, seed, round, c.Op, c.Alloc.Job, err)
					}
					checkCapacity(t, l)
					if c.Alloc.Partner != NoPartner {
						shared++
					}
				}
				if !reflect.DeepEqual(l.allocs, plan.Ledger.allocs) {
					t.Fatalf("%s: the plan's ledger differs from its changes replayed", name)
				}
				for _, id := range l.Jobs() {
					if _, err := m.Held(l, id); err != nil {
						t.Fatalf("%s: job %d holds an allocation without a speed: %v", name, id, err)
					}
				}
				for i, id := range l.Jobs() {
					if i%2 == round%2 {
						if err := l.Release(id); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
		}
		if (name == "gandiva" || name == "integrated-greedy") && shared == 0 {
			t.Errorf("%s never shared a GPU: the test does not reach its packing", name)
		}
	}
}
