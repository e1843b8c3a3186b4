package env

import (
	"fmt"
	"math"

	"github.com/schedrl/schedrl/sim"
)

// PlacementSpec is the feature-spec version of the placement observation; bump it whenever a
// feature, its order or its normalisation changes.
const PlacementSpec = "placement-v1"

// PlacementName is the environment's name in configs and manifests.
const PlacementName = "placement"

var placementSpec = registerSpec(Spec{
	Env: PlacementName, Version: PlacementSpec, Stages: 1,
	Node: []string{
		"cpu_free", "mem_free", "gpus", "gpu_idle", "gpu_full_free", "gpu_max_free", "frag",
		"same_class_tasks", "allowed", "feasible", "frag_delta", "cpu_free_after", "gpu_idle_after",
	},
	Task: []string{"cpu", "mem", "num_gpu", "gpu_milli", "sharing", "cpu_only", "constrained", "gpu_total"},
	Global: []string{
		"gpu_alloc", "cpu_alloc", "mem_alloc", "frag_ratio", "frag_capacity", "arrived", "feasible_frac",
	},
})

// Options are the placement reward weights: reward = Placed x GPUs placed - Fragment x fragment
// added (both in GPUs), so the return follows the allocation the paper measures while each step
// is charged for the fragment it creates.
type Options struct {
	RewardPlaced   float64 `json:"reward_placed"`
	RewardFragment float64 `json:"reward_fragment"`
	// Candidates is the action set: every feasible node (CandidatesFeasible, "" too) or only
	// the feasible nodes with FGD's best integer score (CandidatesFGDBest), so a policy
	// decides what FGD leaves to its tie order.
	Candidates string `json:"candidates,omitempty"`
}

// The action sets of Options.Candidates.
const (
	CandidatesFeasible = "feasible"
	CandidatesFGDBest  = "fgd-best"
)

// CheckCandidates reports an unknown action set.
func CheckCandidates(c string) error {
	switch c {
	case "", CandidatesFeasible, CandidatesFGDBest:
		return nil
	}
	return fmt.Errorf("candidates: must be %s or %s, got %q", CandidatesFeasible, CandidatesFGDBest, c)
}

// DefaultOptions weighs allocation and fragment equally.
func DefaultOptions() Options { return Options{RewardPlaced: 1, RewardFragment: 1} }

// Placement is the task-arrival environment (the FGD paper's protocol) at one decision: a task
// has arrived and must go to a feasible node. The action is the node; for GPU tasks the
// environment picks the GPUs that raise the node's fragment least (what FGD does inside a node),
// unless the action names them. Scoring nodes instead of (node, GPU) pairs keeps the candidate
// set one entity per node, so the network stays one shared node scorer.
type Placement struct {
	c    *sim.Cluster
	opts Options
	norm norms

	task    sim.Task
	arrived int64
	pending bool

	nFeasible   int
	feasibleIdx []int
	scored      bool // allowed and delta are filled for the pending task
	feasible    []bool
	allowed     []bool
	delta       []float64 // fragment change (milli) of the best GPU choice per feasible node

	shape int32   // the task's shape id in cache
	class []int32 // per node: its (GPU count, type) id in cache
	cache *ScoreCache
	// memo holds, per task shape, each node's score and the node version it was taken at,
	// so a decision rescores only the nodes changed since the shape was last seen (as FGD's
	// own cache does) instead of hashing every feasible node's content.
	memo map[int32][]memoEntry
}

type memoEntry struct {
	version uint64 // the node's version + 1; 0: empty
	s       scored
}

// memoShapes bounds the shapes memo keeps (a few hundred occur in a trace); it is cleared
// when full.
const memoShapes = 512

// norms are the cluster-relative constants features are divided by.
type norms struct {
	cpu, mem float64 // largest node's
}

// NewPlacement wraps a cluster; the environment mutates it as actions are applied.
func NewPlacement(c *sim.Cluster, opts Options) *Placement {
	p := &Placement{c: c, opts: opts}
	for i := range c.NumNodes() {
		n := c.Node(i)
		p.norm.cpu = math.Max(p.norm.cpu, float64(n.CPU))
		p.norm.mem = math.Max(p.norm.mem, float64(n.Mem))
	}
	p.norm.cpu = math.Max(p.norm.cpu, 1)
	p.norm.mem = math.Max(p.norm.mem, 1)
	n := c.NumNodes()
	p.feasible, p.allowed = make([]bool, n), make([]bool, n)
	p.delta = make([]float64, n)
	p.ShareCache(NewScoreCache())
	return p
}

// ShareCache makes the environment score nodes through k, which other environments over
// clusters with the same fragmentation model may share (sequentially, not concurrently).
func (p *Placement) ShareCache(k *ScoreCache) {
	p.cache = k
	p.memo = map[int32][]memoEntry{} // shape ids are k's
	p.class = grow(p.class, p.c.NumNodes())
	for i := range p.class {
		p.class[i] = k.class(p.c.Node(i))
	}
	p.scored = false
}

// Spec is the placement observation layout.
func (p *Placement) Spec() Spec { return placementSpec }

// Cluster is the cluster the environment acts on.
func (p *Placement) Cluster() *sim.Cluster { return p.c }

// Done reports whether no task is waiting for a decision.
func (p *Placement) Done() bool { return !p.pending }

// Task is the task waiting for a decision.
func (p *Placement) Task() sim.Task { return p.task }

// Present makes t the pending decision; arrived is the GPU request (milli) that arrived before
// it, failed tasks included. It returns the number of feasible nodes: with none, nothing is
// pending (the task fails).
func (p *Placement) Present(t sim.Task, arrived int64) int {
	p.task, p.arrived = t, arrived
	p.shape = p.cache.shape(t)
	p.feasibleIdx = p.c.FeasibleNodes(t, p.feasibleIdx[:0])
	clear(p.feasible)
	for _, i := range p.feasibleIdx {
		p.feasible[i] = true
	}
	p.nFeasible = len(p.feasibleIdx)
	p.scored = false
	p.pending = p.nFeasible > 0
	return p.nFeasible
}

// scoreAll fills the type check of every node and the best GPU choice of every feasible one;
// Present leaves it to Observe so that replaying a log (masks and rewards only) stays cheap.
func (p *Placement) scoreAll() {
	if p.scored {
		return
	}
	p.scored = true
	for i := range p.allowed {
		p.allowed[i] = p.c.Allowed(p.task, i)
	}
	clear(p.delta)
	row := p.memo[p.shape]
	if row == nil {
		if len(p.memo) >= memoShapes {
			clear(p.memo)
		}
		row = make([]memoEntry, p.c.NumNodes())
		p.memo[p.shape] = row
	}
	for _, i := range p.feasibleIdx {
		if v := p.c.NodeVersion(i) + 1; row[i].version != v {
			s, _ := p.score(i)
			row[i] = memoEntry{version: v, s: s}
		}
		p.delta[i] = row[i].s.delta
	}
}

// score is node i's best GPU choice for the pending task.
func (p *Placement) score(i int) (scored, bool) {
	return p.cache.score(p.c, p.class, p.shape, p.task, i)
}

// Mask reports whether node i is feasible for the pending task (the observation's mask may be
// narrower: Options.Candidates).
func (p *Placement) Mask(i int) bool { return p.feasible[i] }

// Observe encodes the pending decision.
func (p *Placement) Observe(obs *Observation) {
	p.scoreAll()
	c, t := p.c, p.task
	n, nf := c.NumNodes(), len(placementSpec.Node)
	obs.Stage, obs.NumNodes = 0, n
	obs.Nodes = grow(obs.Nodes, n*nf)
	obs.Mask = grow(obs.Mask, n)
	copy(obs.Mask, p.feasible)
	if p.opts.Candidates == CandidatesFGDBest {
		p.keepFGDBest(obs.Mask)
	}
	class := t.NumGPU
	if t.Sharing() {
		class = 0
	}
	for i := range n {
		free := c.Free(i)
		idle := float64(free.TotalGPU())
		var maxFree int64
		for g := range free.GPUs {
			maxFree = max(maxFree, free.GPU[g])
		}
		row := obs.Nodes[i*nf : (i+1)*nf]
		row[0] = float32(float64(free.CPU) / p.norm.cpu)
		row[1] = float32(float64(free.Mem) / p.norm.mem)
		row[2] = float32(free.GPUs) / sim.MaxGPUsPerNode
		row[3] = float32(idle / maxMilli)
		row[4] = float32(free.FullGPUs()) / sim.MaxGPUsPerNode
		row[5] = float32(maxFree) / sim.MilliPerGPU
		row[6] = float32(c.NodeFrag(i) / maxMilli)
		same := 0.0
		if t.NumGPU > 0 {
			classes := c.TaskClasses(i)
			same = math.Min(1, float64(classes[class])/sim.MaxGPUsPerNode)
		}
		row[7] = float32(same)
		row[8] = b2f(p.allowed[i])
		row[9] = b2f(p.feasible[i])
		if p.feasible[i] {
			row[10] = float32(p.delta[i] / sim.MilliPerGPU)
			row[11] = float32(float64(free.CPU-t.CPU) / p.norm.cpu)
			row[12] = float32((idle - float64(t.TotalGPUMilli())) / maxMilli)
		} else {
			row[10], row[11], row[12] = 0, 0, 0
		}
	}
	obs.TiePref = grow(obs.TiePref, n)
	for i := range n {
		obs.TiePref[i] = 1 - float32(c.TieRank(i))/float32(n)
	}
	obs.Task = grow(obs.Task, len(placementSpec.Task))
	obs.Task[0] = float32(float64(t.CPU) / p.norm.cpu)
	obs.Task[1] = float32(float64(t.Mem) / p.norm.mem)
	obs.Task[2] = float32(t.NumGPU) / sim.MaxGPUsPerNode
	obs.Task[3] = float32(t.GPUMilli) / sim.MilliPerGPU
	obs.Task[4] = b2f(t.Sharing())
	obs.Task[5] = b2f(t.NumGPU == 0)
	obs.Task[6] = b2f(len(t.GPUTypes) > 0)
	obs.Task[7] = float32(float64(t.TotalGPUMilli()) / maxMilli)

	capCPU, capMem, capGPU := c.Capacity()
	usedCPU, usedMem, usedGPU := c.Used()
	frag := c.ClusterFrag()
	obs.Global = grow(obs.Global, len(placementSpec.Global))
	obs.Global[0] = ratio(usedGPU, capGPU)
	obs.Global[1] = ratio(usedCPU, capCPU)
	obs.Global[2] = ratio(usedMem, capMem)
	obs.Global[3] = 0
	if idle := capGPU - usedGPU; idle > 0 {
		obs.Global[3] = float32(frag / float64(idle))
	}
	obs.Global[4] = float32(frag / math.Max(1, float64(capGPU)))
	obs.Global[5] = ratio(p.arrived, capGPU)
	obs.Global[6] = float32(p.nFeasible) / float32(max(1, n))
}

// keepFGDBest clears the mask of feasible nodes below the best FGD score.
func (p *Placement) keepFGDBest(mask []bool) {
	best := math.Inf(-1)
	for _, i := range p.feasibleIdx {
		best = math.Max(best, sim.FGDScore(p.delta[i]))
	}
	for _, i := range p.feasibleIdx {
		mask[i] = sim.FGDScore(p.delta[i]) == best
	}
}

// maxMilli is the GPU milli of the largest possible node, the scale of per-node GPU amounts.
const maxMilli = sim.MaxGPUsPerNode * sim.MilliPerGPU

func b2f(b bool) float32 {
	if b {
		return 1
	}
	return 0
}

func ratio(a, b int64) float32 {
	if b <= 0 {
		return 0
	}
	return float32(float64(a) / float64(b))
}

// Choice is where Step would put the pending task for action a, checked for feasibility.
func (p *Placement) Choice(a Action) (sim.Choice, error) {
	if !p.pending {
		return sim.Choice{}, fmt.Errorf("no task is waiting for a decision")
	}
	i := a.Candidate
	if i < 0 || i >= p.c.NumNodes() {
		return sim.Choice{}, fmt.Errorf("task %q: node index %d out of range 0..%d", p.task.Name, i, p.c.NumNodes()-1)
	}
	ch := sim.Choice{Node: i, GPUs: a.GPUs}
	if a.GPUs == 0 && p.task.NumGPU > 0 && p.feasible[i] {
		s, _ := p.score(i)
		ch.GPUs = s.gpus
	}
	if err := p.c.Fits(p.task, ch); err != nil {
		return sim.Choice{}, fmt.Errorf("task %q: %w", p.task.Name, err)
	}
	return ch, nil
}

// Step places the pending task.
func (p *Placement) Step(a Action) (Result, error) {
	ch, err := p.Choice(a)
	if err != nil {
		return Result{}, err
	}
	before := p.c.ClusterFrag()
	if err := p.c.Place(p.task, ch); err != nil {
		return Result{}, err
	}
	d := p.c.ClusterFrag() - before
	p.pending = false
	return Result{Reward: p.Reward(p.task, d), Choice: ch, FragDelta: d}, nil
}

// Reward is the reward for placing t when that raised the cluster's fragment by fragDelta milli.
func (p *Placement) Reward(t sim.Task, fragDelta float64) float64 {
	return p.opts.RewardPlaced*float64(t.TotalGPUMilli())/sim.MilliPerGPU - p.opts.RewardFragment*fragDelta/sim.MilliPerGPU
}
