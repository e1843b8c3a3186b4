package nn

import (
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sugarme/gotch"

	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/fungible"
	"github.com/schedrl/schedrl/fungible/fungibletest"
)

// maifsObs is a decision point of n generated jobs on spec's cluster, every third holding last
// round's allocation (TUNE's), so agent, server and candidate rows all vary.
func maifsObs(t testing.TB, spec string, n int) (*env.MAIFS, *env.MAIFSObs) {
	t.Helper()
	m := fungibletest.Model(t)
	c := fungibletest.Cluster(t, spec)
	e, err := env.NewMAIFS(c, m, env.MAIFSOptions{})
	if err != nil {
		t.Fatal(err)
	}
	work := fungibletest.Work(t, m, n, 60, 7)
	prev, err := fungible.Tune(fungible.NewLedger(c), m, work)
	if err != nil {
		t.Fatal(err)
	}
	s := fungible.RoundState{Now: work[n-1].Arrival}
	for i, j := range work {
		st := fungible.JobStatus{Job: j, Done: float64(j.Steps) * float64(i%5) / 10, Waited: s.Now - j.Arrival}
		if i%3 == 0 {
			st.Prev, st.Held = prev.Ledger.Get(j.ID)
		}
		s.Present = append(s.Present, st)
	}
	o, err := e.Observe(fungible.NewLedger(c), s)
	if err != nil {
		t.Fatal(err)
	}
	return e, o
}

func testMAIFSNet(t testing.TB, attention bool) *MAIFSNet {
	t.Helper()
	Seed(3)
	net, err := NewMAIFSNet(NewMAIFSArch(32, 4, 32, attention, env.MAIFSOptions{}), gotch.CPU)
	if err != nil {
		t.Fatal(err)
	}
	return net
}

// permuted is o with agents a and b swapped (their rows, candidates and partners).
func permuted(o *env.MAIFSObs, a, b int) *env.MAIFSObs {
	n := o.NumAgents()
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	perm[a], perm[b] = b, a
	dim := len(o.Agents) / n
	cdim := len(o.Cands) / o.CandStart[n]
	p := &env.MAIFSObs{Servers: o.Servers, CandStart: []int{0}}
	for _, i := range perm {
		p.Agents = append(p.Agents, o.Agents[i*dim:(i+1)*dim]...)
		p.Jobs = append(p.Jobs, o.Jobs[i])
		cands := slices.Clone(o.Cand[i])
		for k := range cands {
			if cands[k].Partner >= 0 {
				cands[k].Partner = perm[cands[k].Partner]
			}
		}
		p.Cand = append(p.Cand, cands)
		p.Cands = append(p.Cands, o.Cands[o.CandStart[i]*cdim:o.CandStart[i+1]*cdim]...)
		p.CandStart = append(p.CandStart, p.CandStart[len(p.CandStart)-1]+len(cands))
	}
	return p
}

// One network scores any number of agents and servers; infeasible candidates get MaskedLogit;
// swapping two agents swaps their scores and nothing else (shared weights, no positions), with
// and without attention across agents.
func TestMAIFSNetIsPermutationEquivariantAndMasks(t *testing.T) {
	for _, attention := range []bool{true, false} {
		net := testMAIFSNet(t, attention)
		sc := MAIFSScorer{Net: net, Dev: gotch.CPU}
		for _, size := range []struct {
			spec string
			n    int
		}{{"8:8:8", 12}, {"36:36:36", 40}} {
			_, o := maifsObs(t, size.spec, size.n)
			got, err := sc.ScoreMAIFS(o)
			if err != nil {
				t.Fatal(err)
			}
			masked := 0
			for i, cands := range o.Cand {
				for k, c := range cands {
					l := got.Logits[o.CandStart[i]+k]
					if c.Feasible == (l == MaskedLogit) {
						t.Fatalf("agent %d candidate %d feasible %v, logit %g", i, k, c.Feasible, l)
					}
					if !c.Feasible {
						masked++
					}
				}
			}
			if size.spec == "8:8:8" && masked == 0 {
				t.Fatal("no infeasible candidate on the small cluster: the mask test tests nothing")
			}
			a, b := 1, size.n-2
			po := permuted(o, a, b)
			swapped, err := sc.ScoreMAIFS(po)
			if err != nil {
				t.Fatal(err)
			}
			for i := range o.NumAgents() {
				j := i
				switch i {
				case a:
					j = b
				case b:
					j = a
				}
				if d := math.Abs(float64(got.Order[i] - swapped.Order[j])); d > 1e-4 {
					t.Fatalf("attention %v: agent %d's order score moved by %g when agents %d and %d swapped", attention, i, d, a, b)
				}
				for k := range o.Cand[i] {
					x, y := got.Logits[o.CandStart[i]+k], swapped.Logits[po.CandStart[j]+k]
					if math.Abs(float64(x-y)) > 1e-3*max(1, math.Abs(float64(x))) {
						t.Fatalf("attention %v: agent %d candidate %d: %g, swapped %g", attention, i, k, x, y)
					}
				}
			}
		}
	}
}

// Attention across agents makes an agent's scores depend on the other agents; without it they
// do not (the ablation really removes it).
func TestMAIFSAgentAttentionSeesTheOthers(t *testing.T) {
	_, o := maifsObs(t, "8:8:8", 12)
	fewer := permuted(o, 0, 0)
	// Drop the last agent (no candidate names it: partners of agent 11 are cut with it).
	n := fewer.NumAgents() - 1
	dim := len(fewer.Agents) / (n + 1)
	cdim := len(fewer.Cands) / fewer.CandStart[n+1]
	fewer.Agents, fewer.Jobs, fewer.Cand = fewer.Agents[:n*dim], fewer.Jobs[:n], fewer.Cand[:n]
	for i := range fewer.Cand {
		fewer.Cand[i] = slices.DeleteFunc(slices.Clone(fewer.Cand[i]), func(c env.MAIFSCand) bool { return c.Partner == n })
	}
	fewer.Cands, fewer.CandStart = nil, []int{0}
	for i := range n {
		fewer.Cands = append(fewer.Cands, o.Cands[o.CandStart[i]*cdim:(o.CandStart[i]+len(fewer.Cand[i]))*cdim]...)
		fewer.CandStart = append(fewer.CandStart, fewer.CandStart[i]+len(fewer.Cand[i]))
	}
	for _, attention := range []bool{true, false} {
		sc := MAIFSScorer{Net: testMAIFSNet(t, attention), Dev: gotch.CPU}
		all, err := sc.ScoreMAIFS(o)
		if err != nil {
			t.Fatal(err)
		}
		less, err := sc.ScoreMAIFS(fewer)
		if err != nil {
			t.Fatal(err)
		}
		d := math.Abs(float64(all.Order[0] - less.Order[0]))
		if attention && d < 1e-6 {
			t.Fatalf("with attention across agents, agent 0's score ignores the others (moved %g)", d)
		}
		if !attention && d > 1e-5 {
			t.Fatalf("without attention across agents, agent 0's score moved %g when another agent left", d)
		}
	}
}

// A checkpoint reloads into the same scores; a placement checkpoint is refused by kind.
func TestMAIFSCheckpointRoundTrip(t *testing.T) {
	net := testMAIFSNet(t, true)
	dir := filepath.Join(t.TempDir(), "maifs")
	if _, err := SaveMAIFS(dir, net, Lineage{}); err != nil {
		t.Fatal(err)
	}
	back, m, err := LoadMAIFS(dir, gotch.CPU)
	if err != nil {
		t.Fatal(err)
	}
	if m.Model != MAIFSKind || m.Env != env.MAIFSName || back.Arch != net.Arch {
		t.Fatalf("manifest %s/%s, arch %+v, want %+v", m.Model, m.Env, back.Arch, net.Arch)
	}
	_, o := maifsObs(t, "8:8:8", 12)
	a, err := MAIFSScorer{Net: net, Dev: gotch.CPU}.ScoreMAIFS(o)
	if err != nil {
		t.Fatal(err)
	}
	b, err := MAIFSScorer{Net: back, Dev: gotch.CPU}.ScoreMAIFS(o)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.Logits, b.Logits) || !slices.Equal(a.Order, b.Order) {
		t.Fatal("reloaded network scores differently")
	}
	placement := filepath.Join(t.TempDir(), "placement")
	if _, err := SaveCheckpoint(placement, testNet(t, 1), Lineage{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadMAIFS(placement, gotch.CPU); err == nil || !strings.Contains(err.Error(), ArchKind) {
		t.Fatalf("loading a placement checkpoint as maifs: %v, want an error naming %s", err, ArchKind)
	}
}
