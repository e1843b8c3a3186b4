package defrag

import (
	"fmt"
	"slices"

	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/sim"
)

// Labelled is one decision of an expert's plan in the defrag environment's terms: the
// observation before it and the action the expert took (targets name their GPUs).
type Labelled struct {
	Obs    env.Observation
	Action env.Action
	Reward float64
}

// ExpertActions replays a plan through the defrag environment, turning each migration into
// its two actions (pick the task, pick its target) and ending with STOP when the plan stops
// before the budget. It fails if the environment's masks refuse a step, so an expert's plans
// are checked to be valid demonstrations; keep receives every labelled decision (nil for none).
func ExpertActions(pr Problem, p Plan, keep func(Labelled)) ([]env.Action, error) {
	e := env.NewDefrag(pr.Cluster.Clone(), pr.Pending, pr.Placer, pr.Options)
	var acts []env.Action
	var obs env.Observation
	step := func(a env.Action) error {
		if keep != nil {
			e.Observe(&obs)
		}
		res, err := e.Step(a)
		if err != nil {
			return err
		}
		if keep != nil {
			keep(Labelled{Obs: copyObs(obs), Action: a, Reward: res.Reward})
		}
		acts = append(acts, a)
		return nil
	}
	for k, s := range p.Steps {
		if e.Done() {
			return acts, fmt.Errorf("step %d: the environment ended the episode first", k+1)
		}
		i := slices.IndexFunc(e.Tasks(), func(q sim.Placement) bool { return q.Task.Name == s.Task })
		if i < 0 {
			return acts, fmt.Errorf("step %d: task %q is not a candidate", k+1, s.Task)
		}
		if err := step(env.Action{Candidate: i}); err != nil {
			return acts, fmt.Errorf("step %d (%s -> %s): %w", k+1, s.FromNode, s.ToNode, err)
		}
		node, ok := e.Cluster().NodeIndex(s.ToNode)
		if !ok {
			return acts, fmt.Errorf("step %d: target node %q does not exist", k+1, s.ToNode)
		}
		if err := step(env.Action{Candidate: node, GPUs: sim.NewGPUSet(s.ToGPUs...)}); err != nil {
			return acts, fmt.Errorf("step %d (%s -> %s): %w", k+1, s.FromNode, s.ToNode, err)
		}
	}
	if !e.Done() {
		if err := step(env.Action{Candidate: len(e.Tasks())}); err != nil {
			return acts, fmt.Errorf("stop: %w", err)
		}
	}
	return acts, nil
}

func copyObs(o env.Observation) env.Observation {
	o.Nodes = slices.Clone(o.Nodes)
	o.Task = slices.Clone(o.Task)
	o.Global = slices.Clone(o.Global)
	o.Mask = slices.Clone(o.Mask)
	return o
}
