package datasets

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/policy"
	"github.com/schedrl/schedrl/sim"
)

func init() {
	registerRowEnv(env.DefragName, rowEnv{
		replay:  replayDefrag,
		options: func(o BuildOptions) any { return o.Defrag },
		decodeStart: func(data []byte) (start, error) {
			var ctx DefragContext
			if err := json.Unmarshal(data, &ctx); err != nil {
				return nil, err
			}
			return &ctx, nil
		},
	})
}

// DefragContext is a defrag episode's start: the cluster snapshot (nodes, typical shapes,
// running tasks with their GPUs, pending queue), the migration budget and reward weights, and
// the placement policy that measures which pending tasks fit.
type DefragContext struct {
	Env      string            `json:"env"`
	Version  string            `json:"feature_spec"`
	Snapshot sim.SnapshotFile  `json:"snapshot"`
	Options  env.DefragOptions `json:"options"`
	Placer   string            `json:"placer"`
}

// NewDefrag starts the context's environment on a fresh cluster.
func (c *DefragContext) NewDefrag() (*env.Defrag, error) {
	if c.Env != env.DefragName || c.Version != env.DefragSpec {
		return nil, fmt.Errorf("context is for %s %s, this build encodes %s %s", c.Env, c.Version, env.DefragName, env.DefragSpec)
	}
	cl, pending, err := c.Snapshot.Build()
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	placer, err := policy.NewPlacer(c.Placer)
	if err != nil {
		return nil, err
	}
	return env.NewDefrag(cl, pending, placer, c.Options), nil
}

// candidates: stage one has a candidate per running task plus STOP, stage two one per node.
func (c *DefragContext) candidates() int {
	return max(len(c.Snapshot.Nodes), len(c.Snapshot.Running)+1)
}

func (c *DefragContext) open(*env.ScoreCache) (rebuilder, error) {
	e, err := c.NewDefrag()
	if err != nil {
		return nil, err
	}
	return defragRebuild{e}, nil
}

// defragRebuild replays a defrag episode: each row is one stage's action (the task picked, or
// STOP; then its target node and GPUs).
type defragRebuild struct{ e *env.Defrag }

// check makes sure the row is the decision the environment is waiting for; in stage one the
// stored task name must be the candidate's, so a changed candidate order cannot go unnoticed.
func (b defragRebuild) check(r Row) error {
	switch {
	case len(r.Changes) > 0:
		return fmt.Errorf("a defrag row carries %d changes; migrations are actions", len(r.Changes))
	case b.e.Done():
		return fmt.Errorf("the episode has ended, the row is a stage-%d decision", r.Stage)
	case int(r.Stage) != b.e.Stage():
		return fmt.Errorf("row is a stage-%d decision, the environment waits for stage %d", r.Stage, b.e.Stage())
	}
	if r.Stage == 0 {
		tasks, a := b.e.Tasks(), int(r.Action)
		switch {
		case a == len(tasks) && r.TaskID != "":
			return fmt.Errorf("action %d is STOP, the row names task %q", a, r.TaskID)
		case a >= 0 && a < len(tasks) && tasks[a].Task.Name != r.TaskID:
			return fmt.Errorf("candidate %d is task %q, the row names %q", a, tasks[a].Task.Name, r.TaskID)
		}
	}
	return nil
}

func (b defragRebuild) skip(r Row) error {
	if err := b.check(r); err != nil {
		return err
	}
	return b.act(r)
}

func (b defragRebuild) observe(r Row, obs *env.Observation) error {
	if err := b.check(r); err != nil {
		return err
	}
	b.e.Observe(obs)
	return nil
}

func (b defragRebuild) act(r Row) error {
	_, err := b.e.Step(env.Action{Candidate: int(r.Action), GPUs: sim.GPUSet(r.ActionGPUs)})
	return err
}

// replayDefrag turns a migration log into defrag transitions. The log is the start (arrive and
// bind events of the running tasks, arrive events of the pending queue) followed by migrate
// events only. Each migration is two rows (stage one: the task's candidate index; stage two:
// the target node and GPUs); a plan that ends before the budget, with tasks still movable,
// ends with a STOP row. Every event is checked by the simulator's replayer and every action
// by the environment's masks.
func replayDefrag(path string, o BuildOptions, nodes []sim.Node) (*episode, error) {
	l, err := openLog(path, o, nodes)
	if err != nil {
		return nil, err
	}
	defer l.close()
	lr := l.lr
	opts := o.Defrag
	meta := lr.Header.Meta
	if opts.Budget, err = strconv.Atoi(meta["budget"]); err != nil || opts.Budget < 1 {
		return nil, fmt.Errorf("%s: line 1: header meta budget %q: want the plan's migration budget (a count >= 1), as defrag plan --log writes", path, meta["budget"])
	}
	if _, err := policy.NewPlacer(meta["placer"]); err != nil {
		return nil, fmt.Errorf("%s: line 1: header meta placer: %w", path, err)
	}
	r, err := sim.NewReplayer(lr.Header)
	if err != nil {
		return nil, fmt.Errorf("%s: line 1: %w", path, err)
	}
	ep := &episode{}
	var arrived []string // arrival order: the pending queue's order
	var e *env.Defrag
	begin := func() error {
		var pending []sim.Task
		for _, name := range arrived {
			if t, ok := r.Pending(name); ok {
				pending = append(pending, t)
			}
		}
		ctx := &DefragContext{Env: env.DefragName, Version: env.DefragSpec, Snapshot: sim.NewSnapshotFile(r.C, pending, nil),
			Options: opts, Placer: meta["placer"]}
		ep.context = ctx
		e, err = ctx.NewDefrag()
		return err
	}
	var mask []bool
	row := func(line int, stage int, t sim.Task, action int, gpus sim.GPUSet) Row {
		n := e.Cluster().NumNodes()
		if stage == 0 {
			n = len(e.Tasks()) + 1
		}
		mask = mask[:0]
		feasible := 0
		for i := range n {
			mask = append(mask, e.Mask(i))
			if mask[i] {
				feasible++
			}
		}
		return Row{Step: int32(len(ep.rows)), LogLine: int32(line), Stage: int32(stage), TaskID: t.Name,
			TaskCPU: t.CPU, TaskMemory: t.Mem, TaskGPUs: int32(t.NumGPU), TaskGPUMilli: int32(t.GPUMilli), TaskGPUSpec: t.Spec(),
			Mask: PackMask(nil, mask), NumFeasible: int32(feasible), Action: int32(action), ActionGPUs: int32(gpus)}
	}
	line := 1
	for {
		ev, err := lr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		line = lr.Line()
		if ev.Type != sim.EvMigrate {
			if e != nil {
				return nil, fmt.Errorf("%s: line %d: %s event after the first migration: a defrag log is the start, then migrations only", path, line, ev.Type)
			}
			if err := r.Apply(ev); err != nil {
				return nil, fmt.Errorf("%s: line %d: %w", path, line, err)
			}
			if ev.Type == sim.EvArrive {
				arrived = append(arrived, ev.Task)
			}
			continue
		}
		if e == nil {
			if err := begin(); err != nil {
				return nil, fmt.Errorf("%s: line %d: start state: %w", path, line, err)
			}
		}
		if err := r.Apply(ev); err != nil {
			return nil, fmt.Errorf("%s: line %d: %w", path, line, err)
		}
		if err := ep.migration(e, r.C, ev, line, row); err != nil {
			return nil, fmt.Errorf("%s: line %d: %w", path, line, err)
		}
	}
	if e == nil {
		if err := begin(); err != nil {
			return nil, fmt.Errorf("%s: start state: %w", path, err)
		}
	}
	if !e.Done() {
		stop := len(e.Tasks())
		ep.rows = append(ep.rows, row(line, 0, sim.Task{}, stop, 0))
		if _, err := e.Step(env.Action{Candidate: stop}); err != nil {
			return nil, fmt.Errorf("%s: STOP: %w", path, err)
		}
	}
	ep.log = l.info()
	finishEpisode(ep, o.Gamma)
	return ep, nil
}

// migration adds the two rows of a logged migration, already applied to the replayer's cluster
// c, and makes it in the environment.
func (ep *episode) migration(e *env.Defrag, c *sim.Cluster, ev sim.Event, line int, row func(int, int, sim.Task, int, sim.GPUSet) Row) error {
	if e.Done() {
		return fmt.Errorf("migration of %q after the episode ended (budget or nothing movable)", ev.Task)
	}
	k := -1
	for i, p := range e.Tasks() {
		if p.Task.Name == ev.Task {
			k = i
			break
		}
	}
	if k < 0 || !e.Mask(k) {
		return fmt.Errorf("task %q: the environment does not offer it as a movable task", ev.Task)
	}
	t := e.Tasks()[k].Task
	ep.rows = append(ep.rows, row(line, 0, t, k, 0))
	if _, err := e.Step(env.Action{Candidate: k}); err != nil {
		return err
	}
	to, _ := c.Placement(ev.Task)
	if !e.Mask(to.Choice.Node) {
		return fmt.Errorf("task %q to node %s: simulator accepted a migration the environment masks out", ev.Task, ev.Node)
	}
	ep.rows = append(ep.rows, row(line, 1, t, to.Choice.Node, to.Choice.GPUs))
	res, err := e.Step(env.Action{Candidate: to.Choice.Node, GPUs: to.Choice.GPUs})
	if err != nil {
		return err
	}
	ep.rows[len(ep.rows)-1].Reward = float32(res.Reward)
	return nil
}
