package defrag

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/internal/atomicfile"
	"github.com/schedrl/schedrl/policy"
	"github.com/schedrl/schedrl/sim"
)

// Plan file schema (see docs/defrag.md).
const (
	PlanSchema  = "schedrl.defrag-plan"
	PlanVersion = 1
)

// Migration moves a running task from one node/GPU set to another.
type Migration struct {
	Task     string `json:"task"`
	FromNode string `json:"from_node"`
	FromGPUs []int  `json:"from_gpus,omitempty"`
	ToNode   string `json:"to_node"`
	ToGPUs   []int  `json:"to_gpus,omitempty"`
}

// Outcome is a cluster state's measures: its fragment and how much of the pending queue the
// placement policy could place on it.
type Outcome struct {
	FragGPU        float64 `json:"frag_gpu"`
	FragRatioPct   float64 `json:"frag_ratio_pct"`
	PendingPlaced  int     `json:"pending_placed"`
	PendingGPUs    float64 `json:"pending_gpus_placed"`
	MovedGPUs      float64 `json:"moved_gpus"`
	Reward         float64 `json:"reward"`
	PendingTasks   int     `json:"pending_tasks"`
	RunningTasks   int     `json:"running_tasks"`
	MigrationsUsed int     `json:"migrations"`
}

// Step is a migration and the outcome predicted after it.
type Step struct {
	Migration
	After Outcome `json:"after"`
}

// Plan is an ordered list of migrations for one snapshot.
type Plan struct {
	Schema      string  `json:"schema"`
	Version     int     `json:"version"`
	Method      string  `json:"method"`
	Placer      string  `json:"placer"`
	Budget      int     `json:"budget"`
	Samples     int     `json:"samples"`
	Before      Outcome `json:"before"`
	Steps       []Step  `json:"steps"`
	After       Outcome `json:"after"`
	WallSeconds float64 `json:"wall_seconds"`
}

// WritePlan writes p to path atomically.
func WritePlan(path string, p Plan) error {
	data, err := json.MarshalIndent(p, "", " ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, append(data, '\n'), 0o644)
}

// Problem is what a plan is made for: a starting cluster (left unchanged), its pending
// queue, the placement policy that would place pending tasks, and the reward options.
type Problem struct {
	Cluster *sim.Cluster
	Pending []sim.Task
	Placer  policy.Placer
	Options env.DefragOptions
}

// measure is the outcome of c, given the start's placeable work.
func (pr Problem) measure(c *sim.Cluster) Outcome {
	m := c.Metrics()
	n, milli := env.Placeable(c, pr.Pending, pr.Placer)
	return Outcome{FragGPU: m.FragGPU, FragRatioPct: m.FragRatioPct, PendingPlaced: n,
		PendingGPUs: float64(milli) / sim.MilliPerGPU, PendingTasks: len(pr.Pending), RunningTasks: c.Running()}
}

// Replay applies the migrations one by one to a copy of the problem's cluster, checking that
// each is valid at its point (the task runs where the plan says, the target fits), and returns
// the plan with the outcome after every step. The reward adds up env.Defrag's reward terms.
func Replay(pr Problem, method string, ms []Migration) (Plan, error) {
	c := pr.Cluster.Clone()
	probe := env.NewDefrag(c, nil, pr.Placer, pr.Options) // for the reward's normalisation only
	plan := Plan{Schema: PlanSchema, Version: PlanVersion, Method: method, Placer: pr.Placer.Name(),
		Budget: pr.Options.Budget, Steps: []Step{}}
	plan.Before = pr.measure(c)
	cur := plan.Before
	if len(ms) > pr.Options.Budget {
		return plan, fmt.Errorf("plan has %d migrations, budget is %d", len(ms), pr.Options.Budget)
	}
	for k, m := range ms {
		p, ok := c.Placement(m.Task)
		if !ok {
			return plan, fmt.Errorf("step %d: task %q is not running", k+1, m.Task)
		}
		if c.Node(p.Choice.Node).Name != m.FromNode || p.Choice.GPUs != sim.NewGPUSet(m.FromGPUs...) {
			return plan, fmt.Errorf("step %d: task %q runs on %s GPUs %v, plan says %s GPUs %v", k+1, m.Task,
				c.Node(p.Choice.Node).Name, p.Choice.GPUs, m.FromNode, m.FromGPUs)
		}
		i, ok := c.NodeIndex(m.ToNode)
		if !ok {
			return plan, fmt.Errorf("step %d: task %q: target node %q does not exist", k+1, m.Task, m.ToNode)
		}
		if err := c.Migrate(m.Task, sim.Choice{Node: i, GPUs: sim.NewGPUSet(m.ToGPUs...)}); err != nil {
			return plan, fmt.Errorf("step %d: %w", k+1, err)
		}
		next := pr.measure(c)
		gained := int64(math.Round((next.PendingGPUs - cur.PendingGPUs) * sim.MilliPerGPU))
		next.Reward = cur.Reward + probe.Reward(p.Task, (next.FragGPU-cur.FragGPU)*sim.MilliPerGPU, gained)
		next.MovedGPUs = cur.MovedGPUs + float64(p.Task.TotalGPUMilli())/sim.MilliPerGPU
		next.MigrationsUsed = k + 1
		plan.Steps = append(plan.Steps, Step{Migration: m, After: next})
		cur = next
	}
	plan.After = cur
	return plan, nil
}

// Planner proposes migrations for a problem; sample > 0 asks for a different random sample.
type Planner interface {
	Name() string
	Propose(pr Problem, sample int, rng *rand.Rand) ([]Migration, error)
}

// Best samples k plans with planner, replays each and keeps the one with the highest reward
// (the first on ties), so a kept plan is always a validated one.
func Best(pr Problem, planner Planner, k int, seed uint64) (Plan, error) {
	start := time.Now()
	var best Plan
	for s := range k {
		ms, err := planner.Propose(pr, s, sim.RNG(seed, uint64(s)))
		if err != nil {
			return Plan{}, err
		}
		p, err := Replay(pr, planner.Name(), ms)
		if err != nil {
			return Plan{}, fmt.Errorf("%s sample %d produced an invalid plan: %w", planner.Name(), s, err)
		}
		if s == 0 || p.After.Reward > best.After.Reward {
			best = p
		}
	}
	best.Samples = k
	best.WallSeconds = time.Since(start).Seconds()
	return best, nil
}

// MigrationOf describes moving p to ch on c (p is where the task is before the move).
func MigrationOf(c *sim.Cluster, p sim.Placement, to sim.Choice) Migration {
	return Migration{Task: p.Task.Name, FromNode: c.Node(p.Choice.Node).Name, FromGPUs: p.Choice.GPUs.Indices(),
		ToNode: c.Node(to.Node).Name, ToGPUs: to.GPUs.Indices()}
}

// Heuristic plans with one of policy's defragmenters. Evict-then-replace experts move their
// victims all at once; the plan orders those moves so each is feasible as a single migration
// when it is made (a move whose target only frees up later waits; one that never becomes
// feasible, or whose task could not be re-placed, is dropped). A task re-placed on its own
// node stays where it was: like greedy and the defrag environment, plans move tasks between
// nodes only. Sample s > 0 runs the expert with a random tie-break order of nodes.
type Heuristic struct{ D policy.Defragmenter }

// Name is the defragmenter's name.
func (h Heuristic) Name() string { return h.D.Name() }

// Propose runs the defragmenter on a copy of the cluster.
func (h Heuristic) Propose(pr Problem, sample int, rng *rand.Rand) ([]Migration, error) {
	c := pr.Cluster.Clone()
	if sample > 0 {
		if err := c.SetTieOrder(sim.ShuffledOrder(c.NumNodes(), rng)); err != nil {
			return nil, err
		}
	}
	moves, err := h.D.Defrag(c, pr.Placer, pr.Options.Budget, rng, nil)
	if err != nil {
		return nil, err
	}
	return order(pr.Cluster.Clone(), moves), nil
}

// order turns moves into migrations that are feasible one at a time on c (which it mutates),
// keeping the moves' order where possible.
func order(c *sim.Cluster, moves []policy.Move) []Migration {
	left := slices.DeleteFunc(slices.Clone(moves), func(m policy.Move) bool { return m.To.Node < 0 || m.To.Node == m.From.Node })
	var out []Migration
	for progress := true; progress && len(left) > 0; {
		progress = false
		for k := 0; k < len(left); k++ {
			m := left[k]
			p, _ := c.Placement(m.Task)
			if c.Migrate(m.Task, m.To) != nil {
				continue
			}
			out = append(out, MigrationOf(c, p, m.To))
			left = slices.Delete(left, k, k+1)
			k--
			progress = true
		}
	}
	return out
}

// Chooser picks an action for an observation of the defrag environment.
type Chooser func(obs *env.Observation, rng *rand.Rand) (env.Action, error)

// Agent plans by running the defrag environment with a chooser (a trained network's sampler,
// or any other), one migration per two steps until STOP or the budget.
type Agent struct {
	Label  string
	Choose Chooser
}

// Name is the agent's label.
func (a Agent) Name() string { return a.Label }

// Propose runs one episode on a copy of the cluster.
func (a Agent) Propose(pr Problem, _ int, rng *rand.Rand) ([]Migration, error) {
	c := pr.Cluster.Clone()
	e := env.NewDefrag(c, pr.Pending, pr.Placer, pr.Options)
	var obs env.Observation
	var ms []Migration
	var picked sim.Placement
	for !e.Done() {
		stage := e.Stage()
		e.Observe(&obs)
		act, err := a.Choose(&obs, rng)
		if err != nil {
			return nil, err
		}
		if stage == 0 && act.Candidate < len(e.Tasks()) && act.Candidate >= 0 {
			picked = e.Tasks()[act.Candidate]
		}
		res, err := e.Step(act)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", a.Label, err)
		}
		if stage == 1 {
			ms = append(ms, MigrationOf(c, picked, res.Choice))
		}
	}
	return ms, nil
}

func init() { registerPlanner("random", func() Planner { return RandomAgent() }) }

// RandomAgent picks uniformly among the allowed candidates of each stage: a floor for
// learned agents, and a generator of arbitrary valid plans for tests.
func RandomAgent() Agent {
	return Agent{Label: "random", Choose: func(obs *env.Observation, rng *rand.Rand) (env.Action, error) {
		i, ok := env.SampleMasked(obs, rng)
		if !ok {
			return env.Action{}, fmt.Errorf("no allowed candidate")
		}
		return env.Action{Candidate: i}, nil
	}}
}
