package env

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/schedrl/schedrl/sim"
)

// DefragSpec is the feature-spec version of the defrag observation.
const DefragSpec = "defrag-v2"

// DefragName is the environment's name in configs and manifests.
const DefragName = "defrag"

// Both stages' candidate rows share one layout, so one entity scorer serves both: a row is a
// (node, task) pair — the task's current node in stage one, a target node for the picked task
// in stage two — and the last row of stage one is STOP. frag_gain is the fragment the row's
// node loses by the move (the source's in stage one, the target's in stage two) and
// other_gain the other end's (stage one: the best target on another node; stage two: the
// picked task's source), so a row holds both halves of a migration's fragment change — what
// the greedy expert ranks by.
var defragSpec = registerSpec(Spec{
	Env: DefragName, Version: DefragSpec, Stages: 2,
	Node: []string{
		"cpu_free", "mem_free", "gpus", "gpu_idle", "gpu_full_free", "gpu_max_free", "frag",
		"task_cpu", "task_num_gpu", "task_gpu_milli", "task_gpu_total", "frag_gain", "other_gain", "feasible", "stop",
	},
	Task:   []string{"cpu", "mem", "num_gpu", "gpu_milli", "sharing", "cpu_only", "constrained", "gpu_total"},
	Global: []string{"gpu_alloc", "frag_ratio", "frag_capacity", "budget_left", "stage", "pending_placeable"},
})

// DefragOptions are the migration budget and reward weights: a migration's reward is
// Fragment x fragment removed + Pending x pending GPU work that became placeable - Cost x
// (GPUs moved + CPU moved in largest-node units), all in GPUs.
type DefragOptions struct {
	Budget         int     `json:"budget"`
	RewardFragment float64 `json:"reward_fragment"`
	RewardPending  float64 `json:"reward_pending"`
	MigrationCost  float64 `json:"migration_cost"`
}

// Placeable places the pending tasks in queue order with placer on c (each that fits stays
// placed for the next) and reports how many fit and their GPU milli; c is left unchanged.
func Placeable(c *sim.Cluster, pending []sim.Task, placer sim.Placer) (n int, milli int64) {
	s := c.Snapshot()
	rng := sim.RNG(0, sim.StreamPolicy) // the same draws for every state, so states compare
	for _, t := range pending {
		if ch, ok := placer.Place(c, t, rng); ok && c.Place(t, ch) == nil {
			n++
			milli += t.TotalGPUMilli()
		}
	}
	if err := c.Restore(s); err != nil {
		panic(err) // s was taken just above and nothing else snapshots c meanwhile
	}
	c.Discard(s)
	return n, milli
}

// Defrag is the migration environment: stage one picks a running task (masked to those with a
// feasible target on another node) or STOP, stage two a target node (masked to feasible ones);
// the environment then picks the GPUs that raise the target's fragment least, unless the
// action names them. The episode ends at STOP, when the budget is spent or nothing can move.
type Defrag struct {
	c       *sim.Cluster
	pending []sim.Task
	placer  sim.Placer
	opts    DefragOptions
	norm    norms
	cache   *ScoreCache
	class   []int32

	stage, used int
	done        bool
	placeable   int64 // pending GPU milli placeable now
	pendingGPU  int64 // total pending GPU milli

	tasks   []sim.Placement // stage-one candidates, by name
	shapeOf []int32         // per task: its index in shapes
	shapes  []shapeFit
	movable []bool
	gain    []float64 // fragment (milli) the task's node loses without it
	target0 []float64 // fragment (milli) the task's best target on another node loses by taking it
	nMov    int
	touched [2]int // nodes the last migration changed; -1 before the first

	picked     sim.Placement
	pickedK    int // picked's index in tasks
	pickedGain float64
	feasible   []bool
	target     []scored // per node: best GPU choice for the picked task and its fragment change
	nodeBuf    []int
}

// NewDefrag wraps a cluster with its pending queue; the environment mutates the cluster.
// placer decides where pending tasks would go when measuring what has become placeable.
func NewDefrag(c *sim.Cluster, pending []sim.Task, placer sim.Placer, opts DefragOptions) *Defrag {
	d := &Defrag{c: c, pending: pending, placer: placer, opts: opts, cache: NewScoreCache()}
	for i := range c.NumNodes() {
		n := c.Node(i)
		d.norm.cpu = math.Max(d.norm.cpu, float64(n.CPU))
		d.norm.mem = math.Max(d.norm.mem, float64(n.Mem))
		d.class = append(d.class, d.cache.class(n))
	}
	d.norm.cpu, d.norm.mem = math.Max(d.norm.cpu, 1), math.Max(d.norm.mem, 1)
	d.feasible = make([]bool, c.NumNodes())
	d.target = make([]scored, c.NumNodes())
	for _, t := range pending {
		d.pendingGPU += t.TotalGPUMilli()
	}
	_, d.placeable = Placeable(c, pending, placer)
	d.tasks = c.Placements()
	slices.SortFunc(d.tasks, func(a, b sim.Placement) int { return cmp.Compare(a.Task.Name, b.Task.Name) })
	d.touched = [2]int{-1, -1}
	d.refresh()
	return d
}

// Spec is the defrag observation layout.
func (d *Defrag) Spec() Spec { return defragSpec }

// Cluster is the cluster the environment acts on.
func (d *Defrag) Cluster() *sim.Cluster { return d.c }

// Done reports whether the episode has ended.
func (d *Defrag) Done() bool { return d.done }

// Stage is the pending decision's stage: 0 pick a task (or STOP), 1 pick its target.
func (d *Defrag) Stage() int { return d.stage }

// Used is the number of migrations made.
func (d *Defrag) Used() int { return d.used }

// Tasks lists stage one's candidates in order (STOP is candidate len(Tasks())).
func (d *Defrag) Tasks() []sim.Placement { return d.tasks }

// PlaceableMilli is the pending GPU work (milli) that placer could place now.
func (d *Defrag) PlaceableMilli() int64 { return d.placeable }

// movableShape identifies tasks whose feasible target nodes are the same.
type movableShape struct {
	cpu, mem, milli int64
	numGPU          int
	spec            string
}

// shapeFit is one task shape's targets: per node whether the shape fits there and the
// fragment (milli) the node loses by taking it, and the best two nodes by that gain.
type shapeFit struct {
	task                 sim.Task // a task of the shape
	shape                int32    // its ScoreCache shape
	fits                 []bool
	gain                 []float64
	best, second         int // nodes; -1 none
	bestGain, secondGain float64
}

// rank finds the best two nodes in node order; ties go to the lower-indexed node.
func (f *shapeFit) rank() {
	f.best, f.second, f.bestGain, f.secondGain = -1, -1, 0, 0
	for i, ok := range f.fits {
		if !ok {
			continue
		}
		switch g := f.gain[i]; {
		case f.best < 0 || g > f.bestGain:
			f.second, f.secondGain, f.best, f.bestGain = f.best, f.bestGain, i, g
		case f.second < 0 || g > f.secondGain:
			f.second, f.secondGain = i, g
		}
	}
}

// rescore recomputes node i's entry of f and reports whether it changed.
func (d *Defrag) rescore(f *shapeFit, i int) bool {
	s, ok := d.cache.score(d.c, d.class, f.shape, f.task, i)
	g := 0.0
	if ok {
		g = -s.delta
	}
	changed := ok != f.fits[i] || g != f.gain[i]
	f.fits[i], f.gain[i] = ok, g
	return changed
}

// buildShapes groups the tasks by shape and scores every shape on every feasible node.
func (d *Defrag) buildShapes() {
	n := d.c.NumNodes()
	ids := map[movableShape]int32{}
	d.shapeOf = make([]int32, len(d.tasks))
	for k, p := range d.tasks {
		t := p.Task
		key := movableShape{t.CPU, t.Mem, t.GPUMilli, t.NumGPU, t.Spec()}
		id, ok := ids[key]
		if !ok {
			id = int32(len(d.shapes))
			ids[key] = id
			f := shapeFit{task: t, shape: d.cache.shape(t), fits: make([]bool, n), gain: make([]float64, n)}
			d.nodeBuf = d.c.FeasibleNodes(t, d.nodeBuf[:0])
			for _, i := range d.nodeBuf {
				d.rescore(&f, i)
			}
			f.rank()
			d.shapes = append(d.shapes, f)
		}
		d.shapeOf[k] = id
	}
}

// refresh rebuilds stage one's candidates and ends the episode when nothing can move or the
// budget is spent. A task is movable when it fits some node other than its own; tasks of one
// shape share their per-node scores and best two targets (the runner-up, on another node, is
// for the task that sits on the best). A migration changes only its two nodes, so after one
// each shape rescores just those and reranks only when they changed; migrations keep the set
// of running tasks, so the name order and the shapes are kept, and a task's source gain
// changes only when its node did.
func (d *Defrag) refresh() {
	d.stage = 0
	d.movable = grow(d.movable, len(d.tasks))
	d.target0 = grow(d.target0, len(d.tasks))
	d.gain = grow(d.gain, len(d.tasks))
	first := d.shapeOf == nil
	if first {
		d.buildShapes()
	} else {
		for s := range d.shapes {
			f := &d.shapes[s]
			a, b := d.rescore(f, d.touched[0]), d.rescore(f, d.touched[1])
			if a || b {
				f.rank()
			}
		}
	}
	d.nMov = 0
	for k, p := range d.tasks {
		f := &d.shapes[d.shapeOf[k]]
		to, gain := f.best, f.bestGain
		if to == p.Choice.Node {
			to, gain = f.second, f.secondGain
		}
		d.movable[k], d.target0[k] = to >= 0, 0
		if to >= 0 {
			d.target0[k] = gain
			d.nMov++
		}
		if n := p.Choice.Node; first || n == d.touched[0] || n == d.touched[1] {
			without, _ := d.c.FragWithout(p.Task.Name)
			d.gain[k] = d.c.NodeFrag(n) - without
		}
	}
	d.done = d.nMov == 0 || d.used >= d.opts.Budget
}

// Mask reports whether stage candidate i is allowed.
func (d *Defrag) Mask(i int) bool {
	if d.stage == 0 {
		return i == len(d.tasks) || (i >= 0 && i < len(d.tasks) && d.movable[i])
	}
	return i >= 0 && i < len(d.feasible) && d.feasible[i]
}

// Observe encodes the pending decision.
func (d *Defrag) Observe(obs *Observation) {
	nf := len(defragSpec.Node)
	obs.Stage = d.stage
	var t sim.Task
	if d.stage == 0 {
		obs.NumNodes = len(d.tasks) + 1
		obs.Nodes = grow(obs.Nodes, obs.NumNodes*nf)
		obs.Mask = grow(obs.Mask, obs.NumNodes)
		for k, p := range d.tasks {
			d.row(obs.Nodes[k*nf:(k+1)*nf], p.Choice.Node, p.Task, d.gain[k], d.target0[k], d.movable[k])
			obs.Mask[k] = d.movable[k]
		}
		stop := obs.Nodes[len(d.tasks)*nf : obs.NumNodes*nf]
		clear(stop)
		stop[nf-1] = 1
		obs.Mask[len(d.tasks)] = true
	} else {
		t = d.picked.Task
		n := d.c.NumNodes()
		obs.NumNodes = n
		obs.Nodes = grow(obs.Nodes, n*nf)
		obs.Mask = grow(obs.Mask, n)
		for i := range n {
			gain := 0.0
			if d.feasible[i] {
				gain = -d.target[i].delta
			}
			d.row(obs.Nodes[i*nf:(i+1)*nf], i, t, gain, d.pickedGain, d.feasible[i])
		}
		copy(obs.Mask, d.feasible)
	}
	obs.Task = grow(obs.Task, len(defragSpec.Task))
	clear(obs.Task)
	if d.stage == 1 {
		obs.Task[0] = float32(float64(t.CPU) / d.norm.cpu)
		obs.Task[1] = float32(float64(t.Mem) / d.norm.mem)
		obs.Task[2] = float32(t.NumGPU) / sim.MaxGPUsPerNode
		obs.Task[3] = float32(t.GPUMilli) / sim.MilliPerGPU
		obs.Task[4] = b2f(t.Sharing())
		obs.Task[5] = b2f(t.NumGPU == 0)
		obs.Task[6] = b2f(len(t.GPUTypes) > 0)
		obs.Task[7] = float32(float64(t.TotalGPUMilli()) / maxMilli)
	}
	_, _, capGPU := d.c.Capacity()
	_, _, usedGPU := d.c.Used()
	frag := d.c.ClusterFrag()
	obs.Global = grow(obs.Global, len(defragSpec.Global))
	obs.Global[0] = ratio(usedGPU, capGPU)
	obs.Global[1] = 0
	if idle := capGPU - usedGPU; idle > 0 {
		obs.Global[1] = float32(frag / float64(idle))
	}
	obs.Global[2] = float32(frag / math.Max(1, float64(capGPU)))
	obs.Global[3] = float32(d.opts.Budget-d.used) / float32(max(1, d.opts.Budget))
	obs.Global[4] = float32(d.stage)
	obs.Global[5] = ratio(d.placeable, d.pendingGPU)
}

// row writes one (node, task) candidate row.
func (d *Defrag) row(row []float32, i int, t sim.Task, gain, other float64, feasible bool) {
	free := d.c.Free(i)
	var maxFree int64
	for g := range free.GPUs {
		maxFree = max(maxFree, free.GPU[g])
	}
	row[0] = float32(float64(free.CPU) / d.norm.cpu)
	row[1] = float32(float64(free.Mem) / d.norm.mem)
	row[2] = float32(free.GPUs) / sim.MaxGPUsPerNode
	row[3] = float32(float64(free.TotalGPU()) / maxMilli)
	row[4] = float32(free.FullGPUs()) / sim.MaxGPUsPerNode
	row[5] = float32(maxFree) / sim.MilliPerGPU
	row[6] = float32(d.c.NodeFrag(i) / maxMilli)
	row[7] = float32(float64(t.CPU) / d.norm.cpu)
	row[8] = float32(t.NumGPU) / sim.MaxGPUsPerNode
	row[9] = float32(t.GPUMilli) / sim.MilliPerGPU
	row[10] = float32(float64(t.TotalGPUMilli()) / maxMilli)
	row[11] = float32(gain / sim.MilliPerGPU)
	row[12] = float32(other / sim.MilliPerGPU)
	row[13] = b2f(feasible)
	row[14] = 0
}

// Target is where stage two's action a would move the picked task, checked for feasibility.
func (d *Defrag) Target(a Action) (sim.Choice, error) {
	if d.done || d.stage != 1 {
		return sim.Choice{}, fmt.Errorf("no migration target is being decided")
	}
	i, t := a.Candidate, d.picked.Task
	if !d.Mask(i) {
		return sim.Choice{}, fmt.Errorf("task %q: node candidate %d is not a feasible target", t.Name, i)
	}
	ch := sim.Choice{Node: i, GPUs: a.GPUs}
	if a.GPUs == 0 && t.NumGPU > 0 {
		ch.GPUs = d.target[i].gpus
	}
	if err := d.c.Fits(t, ch); err != nil {
		return sim.Choice{}, fmt.Errorf("task %q: %w", t.Name, err)
	}
	return ch, nil
}

// Step applies the action: in stage one it picks task a.Candidate (or STOP), in stage two it
// migrates the picked task to node a.Candidate.
func (d *Defrag) Step(a Action) (Result, error) {
	if d.done {
		return Result{}, fmt.Errorf("the episode has ended")
	}
	if d.stage == 0 {
		if !d.Mask(a.Candidate) {
			return Result{}, fmt.Errorf("task candidate %d is not movable (0..%d, STOP = %d)", a.Candidate, len(d.tasks)-1, len(d.tasks))
		}
		if a.Candidate == len(d.tasks) {
			d.done = true
			return Result{Done: true}, nil
		}
		d.pick(a.Candidate)
		return Result{}, nil
	}
	ch, err := d.Target(a)
	if err != nil {
		return Result{}, err
	}
	before := d.c.ClusterFrag()
	if err := d.c.Migrate(d.picked.Task.Name, ch); err != nil {
		return Result{}, err
	}
	d.used++
	d.tasks[d.pickedK], _ = d.c.Placement(d.picked.Task.Name)
	d.touched = [2]int{d.picked.Choice.Node, ch.Node}
	delta := d.c.ClusterFrag() - before
	_, placeable := Placeable(d.c, d.pending, d.placer)
	gained := placeable - d.placeable
	d.placeable = placeable
	d.refresh()
	return Result{Reward: d.Reward(d.picked.Task, delta, gained), Done: d.done, Choice: ch, FragDelta: delta}, nil
}

// pick moves to stage two with candidate k as the task to migrate.
func (d *Defrag) pick(k int) {
	p := d.tasks[k]
	d.picked, d.pickedK, d.pickedGain, d.stage = p, k, d.gain[k], 1
	clear(d.feasible)
	d.nodeBuf = d.c.FeasibleNodes(p.Task, d.nodeBuf[:0])
	shape := d.cache.shape(p.Task)
	for _, i := range d.nodeBuf {
		if i == p.Choice.Node {
			continue
		}
		s, ok := d.cache.score(d.c, d.class, shape, p.Task, i)
		d.feasible[i], d.target[i] = ok, s
	}
}

// Reward is the reward of migrating t when that changed the cluster's fragment by fragDelta
// milli and made gained milli of pending GPU work placeable.
func (d *Defrag) Reward(t sim.Task, fragDelta float64, gained int64) float64 {
	moved := float64(t.TotalGPUMilli())/sim.MilliPerGPU + float64(t.CPU)/d.norm.cpu
	return (-d.opts.RewardFragment*fragDelta+d.opts.RewardPending*float64(gained))/sim.MilliPerGPU - d.opts.MigrationCost*moved
}

// SampleMasked draws a candidate of obs uniformly among the allowed ones; ok is false when
// none is allowed.
func SampleMasked(obs *Observation, rng *rand.Rand) (int, bool) {
	n := 0
	for i := range obs.NumNodes {
		if obs.Mask[i] {
			n++
		}
	}
	if n == 0 {
		return 0, false
	}
	k := rng.IntN(n)
	for i := range obs.NumNodes {
		if obs.Mask[i] {
			if k == 0 {
				return i, true
			}
			k--
		}
	}
	return 0, false
}
