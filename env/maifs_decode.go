package env

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/schedrl/schedrl/fungible"
)

// MAIFSScores is a network's output on an observation: a priority per agent (who decides
// first) and a logit per candidate row, aligned with MAIFSObs.Cands.
type MAIFSScores struct {
	Order  []float32
	Logits []float32
}

// MAIFSScorer scores observations (the network, through nn).
type MAIFSScorer interface {
	ScoreMAIFS(o *MAIFSObs) (MAIFSScores, error)
}

// MAIFSDecision is what the decoder did at one decision point.
type MAIFSDecision struct {
	Plan   fungible.Plan
	Choice []int // per agent, the candidate taken (0: wait, also when none of its choices fit)
	// Edges and Components describe the coordination graph: agents are linked when a feasible
	// candidate of each needs the same GPU type's servers, or one names the other as partner.
	Edges, Components int
	// Conflicts counts the agents whose choice the graph-free decoder (every agent its best
	// feasible candidate at once, on the ledger the round starts from) could not apply because
	// another agent had taken the resources first.
	Conflicts int
}

// graph builds the coordination graph of o: its edge count and components.
func graph(o *MAIFSObs) (edges, components int) {
	n := o.NumAgents()
	mask := make([]uint8, n)
	parent := make([]int, n)
	for i := range parent {
		parent[i] = i
	}
	find := func(x int) int {
		for parent[x] != x {
			parent[x] = parent[parent[x]]
			x = parent[x]
		}
		return x
	}
	union := func(a, b int) {
		if ra, rb := find(a), find(b); ra != rb {
			parent[ra] = rb
		}
	}
	type link struct{ a, b int }
	partnerLinks := map[link]bool{}
	for i, cands := range o.Cand {
		for _, c := range cands {
			switch {
			case c.Wait || !c.Feasible:
			case c.Partner >= 0:
				partnerLinks[link{min(i, c.Partner), max(i, c.Partner)}] = true
			default:
				mask[i] |= 1 << slices.Index(fungible.GPUTypes, c.GPUType)
			}
		}
	}
	for i := range n {
		for j := i + 1; j < n; j++ {
			if mask[i]&mask[j] != 0 || partnerLinks[link{i, j}] {
				edges++
				union(i, j)
			}
		}
	}
	for i := range n {
		if find(i) == i {
			components++
		}
	}
	return edges, components
}

// byLogit lists agent i's feasible candidates, best logit first (ties: the earlier candidate).
func byLogit(o *MAIFSObs, sc MAIFSScores, i int) []int {
	var out []int
	for k, c := range o.Cand[i] {
		if c.Feasible {
			out = append(out, k)
		}
	}
	base := o.CandStart[i]
	slices.SortStableFunc(out, func(a, b int) int { return cmp.Compare(sc.Logits[base+b], sc.Logits[base+a]) })
	return out
}

// try applies candidate k of agent i on pl; false when it does not fit.
func try(pl *fungible.Placer, o *MAIFSObs, i, k int) (bool, error) {
	c, j := o.Cand[i][k], o.Jobs[i].Job
	if c.Partner >= 0 {
		return pl.Share(j, o.Jobs[c.Partner].ID, c.CPUs, c.Mem)
	}
	return pl.Start(j, c.GPUType, c.GPUs, c.CPUs, c.Mem)
}

// Decode turns scores into a plan on top of l. Coordinated, agents decide one after another in
// the order the network scores (highest first, ties oldest first), each taking its best
// candidate that still fits what the agents before it took (so no two claim the same GPUs,
// CPUs or memory), or waiting when wait scores higher than everything that fits. Without
// coordination (the ablation) every agent takes its best candidate on l as if alone, and those
// that collide wait. If nothing would start on an empty ledger, the first agent in order takes
// its best candidate that fits, so a run always progresses.
func (e *MAIFS) Decode(l *fungible.Ledger, o *MAIFSObs, sc MAIFSScores, coordinated bool) (MAIFSDecision, error) {
	n := o.NumAgents()
	if len(sc.Order) != n || len(sc.Logits) != o.CandStart[n] {
		return MAIFSDecision{}, fmt.Errorf("maifs: scores for %d agents and %d candidates, the observation has %d and %d", len(sc.Order), len(sc.Logits), n, o.CandStart[n])
	}
	d := MAIFSDecision{Choice: make([]int, n)}
	d.Edges, d.Components = graph(o)
	ranked := make([][]int, n)
	for i := range n {
		ranked[i] = byLogit(o, sc, i)
	}
	// The graph-free decoder, which is also the ablation's plan.
	free := fungible.NewPlacer(l, e.m)
	freeChoice := make([]int, n)
	for i := range n {
		k := ranked[i][0]
		if o.Cand[i][k].Wait {
			continue
		}
		ok, err := try(free, o, i, k)
		if err != nil {
			return d, err
		}
		if ok {
			freeChoice[i] = k
		} else {
			d.Conflicts++
		}
	}
	if !coordinated {
		d.Plan, d.Choice = free.Plan(), freeChoice
		return d, e.progress(l, o, sc, ranked, &d)
	}
	pl := fungible.NewPlacer(l, e.m)
	for _, i := range agentOrder(sc.Order) {
		for _, k := range ranked[i] {
			if o.Cand[i][k].Wait {
				break
			}
			ok, err := try(pl, o, i, k)
			if err != nil {
				return d, err
			}
			if ok {
				d.Choice[i] = k
				break
			}
		}
	}
	d.Plan = pl.Plan()
	return d, e.progress(l, o, sc, ranked, &d)
}

// agentOrder is the agents by priority, highest first, ties by index (oldest first).
func agentOrder(order []float32) []int {
	idx := make([]int, len(order))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(order[b], order[a]) })
	return idx
}

// progress makes sure a plan on an empty ledger starts someone (see Decode).
func (e *MAIFS) progress(l *fungible.Ledger, o *MAIFSObs, sc MAIFSScores, ranked [][]int, d *MAIFSDecision) error {
	if len(d.Plan.Ledger.Jobs()) > 0 || len(l.Jobs()) > 0 || o.NumAgents() == 0 {
		return nil
	}
	pl := fungible.NewPlacer(l, e.m)
	for _, i := range agentOrder(sc.Order) {
		for _, k := range ranked[i] {
			if o.Cand[i][k].Wait {
				continue
			}
			ok, err := try(pl, o, i, k)
			if err != nil || ok {
				if ok {
					d.Plan, d.Choice[i] = pl.Plan(), k
				}
				return err
			}
		}
	}
	return nil
}

// MAIFSStats sums a run's decision points.
type MAIFSStats struct {
	Decisions int `json:"decisions"`
	Agents    int `json:"agents"`
	Edges     int `json:"edges"`
	Conflicts int `json:"conflicts"` // of the graph-free decoder
}

// MAIFSPolicy runs a scorer as the fungible world's round policy: observe, score, decode.
type MAIFSPolicy struct {
	Env    *MAIFS
	Scorer MAIFSScorer
	// Uncoordinated decodes without the coordination graph (the ablation).
	Uncoordinated bool
	Stats         MAIFSStats
}

// Plan implements fungible.RoundPolicy.
func (p *MAIFSPolicy) Plan(l *fungible.Ledger, _ fungible.SpeedModel, s fungible.RoundState) (fungible.Plan, error) {
	o, err := p.Env.Observe(l, s)
	if err != nil {
		return fungible.Plan{}, err
	}
	sc, err := p.Scorer.ScoreMAIFS(o)
	if err != nil {
		return fungible.Plan{}, err
	}
	d, err := p.Env.Decode(l, o, sc, !p.Uncoordinated)
	if err != nil {
		return fungible.Plan{}, err
	}
	p.Stats.Decisions++
	p.Stats.Agents += o.NumAgents()
	p.Stats.Edges += d.Edges
	p.Stats.Conflicts += d.Conflicts
	return d.Plan, nil
}

// MAIFSReward is the reward of one round: minus the jobs in the system times the round's
// length, plus the makespan term, minus MakespanWeight times the length while any job is in
// the system, both in hours. The first sums over a run to minus the total JCT (each job counts
// every round from its arrival's boundary to the round it finishes in, so it overstates a job's
// JCT by less than a round at each end); the second sums to minus the time the cluster has work,
// which is the makespan less the idle gaps between arrivals: the part of the makespan a
// scheduler can shorten, weighed against the mean without letting a short job's wait dominate.
func (e *MAIFS) Reward(jobsInSystem int, elapsed float64) float64 {
	if jobsInSystem == 0 {
		return 0
	}
	return -(float64(jobsInSystem) + e.opts.MakespanWeight) * elapsed / 3600
}

// WorkLeft is a job's remaining work in hours at its reference speed (alone at its requested
// count on its fastest type, the observation's "remaining"). Minus its sum over the jobs in the
// system is the potential of the PPO fine-tune's reward shaping (docs/maifs.md, "Reward").
func (e *MAIFS) WorkLeft(st fungible.JobStatus) float64 {
	ref := e.refSpeed(st.Job)
	if ref <= 0 {
		return 0
	}
	return st.Remaining() / ref / 3600
}

// DecodeTurns decodes along the coordination graph as Decode does, agents in the order the
// scores give (highest first, ties oldest first), but lets choose pick each agent's candidate
// from those open at its turn: wait, and the feasible candidates that still fit what the agents
// before it took (TurnMasks' rule). Decode is DecodeTurns choosing the best-scoring open
// candidate; a policy-gradient rollout samples instead, and its update masks each agent with
// the open sets returned. If nothing starts on an empty ledger, the first agent in order with
// a candidate that fits chooses again with wait closed (its open set and choice are replaced),
// so a run always progresses.
func (e *MAIFS) DecodeTurns(l *fungible.Ledger, o *MAIFSObs, order []float32, choose func(i int, open []bool) int) (fungible.Plan, []int, [][]bool, error) {
	n := o.NumAgents()
	if len(order) != n {
		return fungible.Plan{}, nil, nil, fmt.Errorf("maifs: order scores for %d agents, the observation has %d", len(order), n)
	}
	choice, open := make([]int, n), make([][]bool, n)
	pl := fungible.NewPlacer(l, e.m)
	turn := func(i int, wait bool) (bool, error) {
		j := o.Jobs[i].Job
		m := make([]bool, len(o.Cand[i]))
		fits := false
		for k, c := range o.Cand[i] {
			switch {
			case c.Wait:
				m[k] = wait
			case !c.Feasible:
			case c.Partner >= 0:
				m[k] = pl.CanShare(j, o.Jobs[c.Partner].ID, c.CPUs, c.Mem)
			default:
				m[k] = pl.Fits(c.GPUType, c.GPUs, c.CPUs, c.Mem)
			}
			fits = fits || (m[k] && !c.Wait)
		}
		if !wait && !fits {
			return false, nil
		}
		k := choose(i, m)
		if k < 0 || k >= len(m) || !m[k] {
			return false, fmt.Errorf("maifs: agent %d chose candidate %d, not open at its turn", i, k)
		}
		open[i], choice[i] = m, k
		if o.Cand[i][k].Wait {
			return false, nil
		}
		ok, err := try(pl, o, i, k)
		if err == nil && !ok {
			err = fmt.Errorf("maifs: agent %d: open candidate %d does not fit", i, k)
		}
		return ok, err
	}
	agents := agentOrder(order)
	started := false
	for _, i := range agents {
		ok, err := turn(i, true)
		if err != nil {
			return fungible.Plan{}, nil, nil, err
		}
		started = started || ok
	}
	if !started && len(l.Jobs()) == 0 {
		for _, i := range agents {
			ok, err := turn(i, false)
			if err != nil || ok {
				if err != nil {
					return fungible.Plan{}, nil, nil, err
				}
				break
			}
		}
	}
	return pl.Plan(), choice, open, nil
}
