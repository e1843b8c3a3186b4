package env

import (
	"fmt"
	"math"
	"slices"

	"github.com/schedrl/schedrl/fungible"
)

// MAIFSSample is one decision point of an expert: the observation, each agent's candidate
// matching the expert's allocation (0: it waited), and each agent's place in the expert's order
// (0 first; the agents it did not order come last, oldest first).
type MAIFSSample struct {
	State   fungible.RoundState // what Obs was observed from (on the empty ledger of a boundary)
	Obs     *MAIFSObs
	Actions []int
	Rank    []int
	// Turn is, per agent, which candidates still fit when its turn comes in the expert's order
	// (TurnMasks): what the decoder lets it choose from, so what cloning masks.
	Turn [][]bool
}

// TurnMasks replays an expert's decisions in its order on the empty ledger, placed as the
// decoder places them, and records, before each agent's turn, which of its candidates fit what
// the agents before it took (wait always does). The expert's own candidate stays open: where the
// expert placed earlier jobs on other servers than the replay does (TUNE starts a job at its
// best case and shrinks it later), it may not fit the replay's ledger, and is then not applied.
func (e *MAIFS) TurnMasks(o *MAIFSObs, actions, rank []int) ([][]bool, error) {
	n := o.NumAgents()
	order := make([]int, n)
	for i, r := range rank {
		if r < 0 || r >= n {
			return nil, fmt.Errorf("agent %d: rank %d of %d", i, r, n)
		}
		order[r] = i
	}
	pl := fungible.NewPlacer(fungible.NewLedger(e.c), e.m)
	masks := make([][]bool, n)
	for _, i := range order {
		j := o.Jobs[i].Job
		masks[i] = make([]bool, len(o.Cand[i]))
		for k, c := range o.Cand[i] {
			switch {
			case c.Wait:
				masks[i][k] = true
			case !c.Feasible:
			case c.Partner >= 0:
				masks[i][k] = pl.CanShare(j, o.Jobs[c.Partner].ID, c.CPUs, c.Mem)
			default:
				masks[i][k] = pl.Fits(c.GPUType, c.GPUs, c.CPUs, c.Mem)
			}
		}
		if k := actions[i]; k > 0 {
			masks[i][k] = true
			if _, err := try(pl, o, i, k); err != nil {
				return nil, err
			}
		}
	}
	return masks, nil
}

// Labels maps an expert's plan onto o's candidates. An allocation matches the candidate of the
// same GPU type, count, CPUs and memory per GPU, and partner (by job); the expert must be able to
// say what it did in the candidates' terms, so an allocation that matches none is an error
// naming the job.
func (e *MAIFS) Labels(o *MAIFSObs, plan fungible.Plan, queue []fungible.Job) ([]int, []int, error) {
	n := o.NumAgents()
	actions := make([]int, n)
	agentOf := make(map[int]int, n)
	for i, j := range o.Jobs {
		agentOf[j.ID] = i
	}
	for i, j := range o.Jobs {
		a, held := plan.Ledger.Get(j.ID)
		if !held {
			continue
		}
		k := slices.IndexFunc(o.Cand[i], func(c MAIFSCand) bool {
			if c.Wait || c.GPUs != a.GPUCount() || c.CPUs != a.CPUsPerGPU || c.Mem != a.MemPerGPU {
				return false
			}
			if a.Partner == fungible.NoPartner {
				return c.Partner < 0 && c.GPUType == a.GPUType
			}
			p, ok := agentOf[a.Partner]
			return ok && c.Partner == p
		})
		if k < 0 {
			return nil, nil, fmt.Errorf("job %d: the expert's allocation (%d %s GPUs, %g CPUs and %g GB per GPU, partner %d) is none of its %d candidates", j.ID, a.GPUCount(), a.GPUType, a.CPUsPerGPU, a.MemPerGPU, a.Partner, len(o.Cand[i]))
		}
		actions[i] = k
	}
	rank := make([]int, n)
	for i := range rank {
		rank[i] = -1
	}
	next := 0
	for _, j := range queue {
		if i, ok := agentOf[j.ID]; ok {
			rank[i] = next
			next++
		}
	}
	for i := range rank {
		if rank[i] < 0 {
			rank[i] = next
			next++
		}
	}
	return actions, rank, nil
}

// Agrees is the tie-aware agreement of agent i's chosen candidate with the expert's: the same
// candidate, or two allocations of the same measured speed (within a part in 10^9).
func Agrees(o *MAIFSObs, i, chosen, expert int) bool {
	if chosen == expert {
		return true
	}
	a, b := o.Cand[i][chosen], o.Cand[i][expert]
	if a.Wait || b.Wait {
		return false
	}
	return math.Abs(a.Speed-b.Speed) <= 1e-9*max(a.Speed, b.Speed)
}

// MAIFSRecorder runs an expert rule as a round policy and keeps every Every-th decision point
// as a sample (the first always).
type MAIFSRecorder struct {
	Env     *MAIFS
	Rule    fungible.Rule
	Every   int
	Samples []MAIFSSample
	round   int
}

// Plan implements fungible.RoundPolicy: the rule's plan on the order policy's queue.
func (r *MAIFSRecorder) Plan(l *fungible.Ledger, m fungible.SpeedModel, s fungible.RoundState) (fungible.Plan, error) {
	plan, err := r.Rule(l, m, s.Queue)
	if err != nil {
		return plan, err
	}
	keep := r.round%max(r.Every, 1) == 0
	r.round++
	if !keep {
		return plan, nil
	}
	o, err := r.Env.Observe(l, s)
	if err != nil {
		return plan, err
	}
	actions, rank, err := r.Env.Labels(o, plan, s.Queue)
	if err != nil {
		return plan, fmt.Errorf("round at %g s: %w", s.Now, err)
	}
	turn, err := r.Env.TurnMasks(o, actions, rank)
	if err != nil {
		return plan, fmt.Errorf("round at %g s: %w", s.Now, err)
	}
	r.Samples = append(r.Samples, MAIFSSample{State: s, Obs: o, Actions: actions, Rank: rank, Turn: turn})
	return plan, nil
}
