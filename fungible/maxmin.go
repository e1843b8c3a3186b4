package fungible

import (
	"github.com/schedrl/schedrl/jobs"
)

func init() {
	for _, name := range []string{"max_min_fairness", "max_min_fairness_perf"} {
		registerPolicy(name, func() RoundPolicy {
			pol, err := jobs.NewPolicy(name)
			if err != nil {
				panic(err) // jobs registers both names
			}
			return &perType{policy: pol}
		})
	}
}

// perType runs one of jobs' per-type policies in the fungible world: Gavel's max-min fairness
// LPs (jobs/maxmin_policy.go: the LP over GPU types, re-solved when the jobs change, each job's
// priority on a type its debt there) rank each (job, type), and handOut starts them in that order
// on the servers at the requested GPU count and the fair share of CPUs and memory: the LPs are
// fixed-demand.
type perType struct {
	policy jobs.Policy
	prio   [][jobs.NumGPUs]float64
}

func (p *perType) Plan(l *Ledger, m SpeedModel, s RoundState) (Plan, error) {
	r, present := s.Round, s.jobs()
	p.prio = append(p.prio[:0], make([][jobs.NumGPUs]float64, len(present))...)
	p.policy.Priorities(r, p.prio)
	var cs []combo
	for i := range present {
		for g := range jobs.GPU(jobs.NumGPUs) {
			if v := p.prio[i][g]; v > 0 {
				cs = append(cs, combo{a: i, b: -1, g: g, rank: [3]float64{v}})
			}
		}
	}
	return handOut(l, m, present, cs)
}
