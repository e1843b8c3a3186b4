package env

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/schedrl/schedrl/fungible"
	"github.com/schedrl/schedrl/fungible/fungibletest"
	"github.com/schedrl/schedrl/jobs"
)

func gavelModel(t testing.TB) fungible.SpeedModel { return fungibletest.Model(t) }

func maifsWorld(t testing.TB, spec string, jobsN int, lam float64, seed uint64) (*MAIFS, []fungible.Job) {
	t.Helper()
	m := fungibletest.Model(t)
	e, err := NewMAIFS(fungibletest.Cluster(t, spec), m, MAIFSOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return e, fungibletest.Work(t, m, jobsN, lam, seed)
}

func srtf(t testing.TB) jobs.Policy { return fungibletest.Order(t, "srtf") }

// randScorer draws every score uniformly from a seeded stream.
type randScorer struct{ rng *rand.Rand }

func (r randScorer) ScoreMAIFS(o *MAIFSObs) (MAIFSScores, error) {
	sc := MAIFSScores{Order: make([]float32, o.NumAgents()), Logits: make([]float32, o.CandStart[o.NumAgents()])}
	for i := range sc.Order {
		sc.Order[i] = r.rng.Float32()
	}
	for i := range sc.Logits {
		sc.Logits[i] = r.rng.Float32()
	}
	return sc, nil
}

// oneHot scores a sample's expert labels 1 and everything else 0, agents by the expert's rank.
func oneHot(s MAIFSSample) MAIFSScores {
	o := s.Obs
	sc := MAIFSScores{Order: make([]float32, o.NumAgents()), Logits: make([]float32, o.CandStart[o.NumAgents()])}
	for i, k := range s.Actions {
		sc.Order[i] = -float32(s.Rank[i])
		sc.Logits[o.CandStart[i]+k] = 1
	}
	return sc
}

// The decoder given the expert's labels (in the expert's order) starts exactly the jobs TUNE
// starts, with the same GPU type, count, CPUs and memory: the candidates can say what the best
// baseline does, which behaviour cloning rests on. Each expert choice is open at its turn, and
// the turn masks close candidates that earlier agents took.
func TestMAIFSDecoderReproducesTheExpert(t *testing.T) {
	e, work := maifsWorld(t, "8:8:8", 120, 600, 3)
	rec := &MAIFSRecorder{Env: e, Rule: fungible.Tune, Every: 1}
	if _, err := fungible.Run(e.Cluster(), e.Model(), work, fungible.RunConfig{Policy: rec, Order: srtf(t)}); err != nil {
		t.Fatal(err)
	}
	if len(rec.Samples) < 10 {
		t.Fatalf("%d samples", len(rec.Samples))
	}
	waited, started, narrowed := 0, 0, 0
	for si, s := range rec.Samples {
		for i, k := range s.Actions {
			if !s.Turn[i][k] {
				t.Fatalf("sample %d agent %d: the expert's candidate %d is closed at its turn", si, i, k)
			}
			for c, open := range s.Turn[i] {
				if open && !s.Obs.Cand[i][c].Feasible {
					t.Fatalf("sample %d agent %d: candidate %d open at its turn but infeasible on the empty cluster", si, i, c)
				}
				if !open && s.Obs.Cand[i][c].Feasible {
					narrowed++
				}
			}
		}
		empty := fungible.NewLedger(e.Cluster())
		d, err := e.Decode(empty, s.Obs, oneHot(s), true)
		if err != nil {
			t.Fatal(err)
		}
		for i, k := range s.Actions {
			if d.Choice[i] != k && !(d.Choice[i] == 0 && k == 0) {
				t.Fatalf("sample %d agent %d (job %d): decoded candidate %d, the expert's is %d", si, i, s.Obs.Jobs[i].ID, d.Choice[i], k)
			}
			if k == 0 {
				waited++
			} else {
				started++
			}
		}
	}
	if waited == 0 || started == 0 || narrowed == 0 {
		t.Fatalf("the workload never made the expert choose: %d waits, %d starts, %d candidates closed by earlier agents", waited, started, narrowed)
	}
}

// Random scores never over-commit a server: the run's log replays on a ledger that checks every
// allocation, and every job finishes.
func TestMAIFSRandomPolicyNeverOverCommits(t *testing.T) {
	for _, coordinated := range []bool{true, false} {
		e, work := maifsWorld(t, "8:8:8", 80, 300, 5)
		p := &MAIFSPolicy{Env: e, Scorer: randScorer{rand.New(rand.NewPCG(1, 2))}, Uncoordinated: !coordinated}
		res, err := fungible.Run(e.Cluster(), e.Model(), work, fungible.RunConfig{Policy: p, Order: srtf(t), Log: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := fungible.Replay(e.Cluster(), res.Log, nil); err != nil {
			t.Fatalf("coordinated %v: %v", coordinated, err)
		}
		for i, j := range res.JCT {
			if !(j > 0) {
				t.Fatalf("job %d: JCT %g", i, j)
			}
		}
		if coordinated && p.Stats.Edges == 0 {
			t.Fatalf("no coordination edges in %d decisions", p.Stats.Decisions)
		}
		if !coordinated && p.Stats.Conflicts == 0 {
			t.Fatalf("random simultaneous choices never conflicted in %d decisions", p.Stats.Decisions)
		}
	}
}

// Two 8-GPU jobs that both want the only 8-GPU server: the graph links them, the graph-free
// decoder counts one conflict and starts one, and the coordinated one starts the first in order
// and lets the second fall back to what still fits (here: nothing, so it waits).
func TestMAIFSCoordinationGraphAvoidsTheConflict(t *testing.T) {
	m := gavelModel(t)
	c := fungible.Cluster{{Name: "v100-00", GPUType: "v100", GPUs: 8, CPUs: 24, MemGB: 500}}
	e, err := NewMAIFS(c, m, MAIFSOptions{FixedDemand: true})
	if err != nil {
		t.Fatal(err)
	}
	s := fungible.RoundState{Present: []fungible.JobStatus{
		{Job: fungible.Job{ID: 7, Type: "ResNet-50 (batch size 64)", GPUs: 8, Steps: 1000}},
		{Job: fungible.Job{ID: 9, Type: "ResNet-18 (batch size 64)", GPUs: 8, Steps: 1000}},
	}}
	l := fungible.NewLedger(c)
	o, err := e.Observe(l, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Cand[0]) != 2 || len(o.Cand[1]) != 2 {
		t.Fatalf("fixed demand on one type: want wait + one allocation each, got %d and %d", len(o.Cand[0]), len(o.Cand[1]))
	}
	sc := MAIFSScores{Order: []float32{0, 1}, Logits: []float32{0, 1, 0, 1}}
	for _, coordinated := range []bool{true, false} {
		d, err := e.Decode(l, o, sc, coordinated)
		if err != nil {
			t.Fatal(err)
		}
		if d.Edges != 1 || d.Components != 1 || d.Conflicts != 1 {
			t.Fatalf("edges %d components %d conflicts %d, want 1 1 1", d.Edges, d.Components, d.Conflicts)
		}
		got := d.Plan.Ledger.Jobs()
		want := 9 // coordinated: the agent scored first
		if !coordinated {
			want = 7 // graph-free: the first to apply wins, the other collides
		}
		if len(got) != 1 || got[0] != want {
			t.Fatalf("coordinated %v: started %v, want [%d]", coordinated, got, want)
		}
	}
}

// The reward sums to minus the jobs' time in the system plus the makespan term.
func TestMAIFSReward(t *testing.T) {
	e, _ := maifsWorld(t, "8:8:8", 1, 60, 1)
	if r := e.Reward(3, 3600); r != -4 {
		t.Fatalf("3 jobs for an hour with makespan weight 1: %g, want -4", r)
	}
	if r := e.Reward(0, 3600); r != 0 {
		t.Fatalf("an empty system: %g, want 0", r)
	}
}

// Bad options name their field.
func TestMAIFSOptionsNameTheField(t *testing.T) {
	for _, o := range []MAIFSOptions{{Window: -1}, {Partners: -2}, {MakespanWeight: -1}, {WindowOrder: "lifo"}} {
		if _, err := NewMAIFS(nil, fungible.SpeedModel{}, o); err == nil {
			t.Fatalf("%+v accepted", o)
		}
	}
	if _, err := NewMAIFS(nil, fungible.SpeedModel{}, MAIFSOptions{WindowOrder: "lifo"}); err == nil || !strings.Contains(err.Error(), "window_order") {
		t.Fatalf("bad window order: %v", err)
	}
}

// With more present jobs than the window, "age" takes the oldest and "srtf" those with the least
// remaining time at their reference speed; both keep the agents in age order.
func TestMAIFSWindowOrder(t *testing.T) {
	m := fungibletest.Model(t)
	c := fungibletest.Cluster(t, "8:8:8")
	work := fungibletest.Work(t, m, 40, 60, 3)
	s := fungible.RoundState{Now: work[len(work)-1].Arrival}
	for i, j := range work {
		s.Present = append(s.Present, fungible.JobStatus{Job: j, Done: float64(j.Steps) * float64(i%7) / 8})
	}
	for _, order := range []string{"", "age", "srtf"} {
		e, err := NewMAIFS(c, m, MAIFSOptions{Window: 10, WindowOrder: order})
		if err != nil {
			t.Fatal(err)
		}
		o, err := e.Observe(fungible.NewLedger(c), s)
		if err != nil {
			t.Fatal(err)
		}
		if o.NumAgents() != 10 {
			t.Fatalf("%q: %d agents, want 10", order, o.NumAgents())
		}
		in := map[int]bool{}
		for k, a := range o.Jobs {
			in[a.ID] = true
			if k > 0 && a.Arrival < o.Jobs[k-1].Arrival {
				t.Fatalf("%q: agents out of age order", order)
			}
		}
		left := func(st fungible.JobStatus) float64 { return st.Remaining() / e.refSpeed(st.Job) }
		for i, st := range s.Present {
			switch {
			case order != "srtf" && in[st.ID] != (i < 10):
				t.Fatalf("%q: job %d (age rank %d) agent %v", order, st.ID, i, in[st.ID])
			case order == "srtf" && !in[st.ID]:
				for _, a := range o.Jobs {
					if left(a) > left(st) {
						t.Fatalf("srtf: job %d (%.0f s left) is outside the window, agent %d (%.0f s left) in it", st.ID, left(st), a.ID, left(a))
					}
				}
			}
		}
	}
}

// WorkLeft is the remaining steps in hours at the job's best speed alone at its requested count.
func TestMAIFSWorkLeft(t *testing.T) {
	e, work := maifsWorld(t, "8:8:8", 1, 60, 1)
	j := work[0]
	ref := e.refSpeed(j)
	st := fungible.JobStatus{Job: j, Done: float64(j.Steps) - 2*3600*ref}
	if got := e.WorkLeft(st); math.Abs(got-2) > 1e-9 {
		t.Fatalf("work left %g h, want 2", got)
	}
}
