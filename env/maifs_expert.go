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
	r.Samples = append(r.Samples, MAIFSSample{State: s, Obs: o, Actions: actions, Rank: rank})
	return plan, nil
}
