package nn

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/sugarme/gotch"

	"github.com/schedrl/schedrl/defrag"
	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/internal/checkpoint"
)

// DefragPolicy is a loaded defrag checkpoint: one entity scorer for both stages of the defrag
// environment (the stage is a global feature). It plans through defrag.Agent, so every plan is
// a sequence of the environment's masked actions, replayed and measured by defrag.Best.
type DefragPolicy struct {
	Net      *Net
	Manifest checkpoint.Manifest
	Label    string // the planning method's name in plans and comparisons
	dev      gotch.Device
}

// LoadDefragPolicy loads the defrag checkpoint in dir onto dev; a checkpoint of another
// environment (a placement network) is refused.
func LoadDefragPolicy(dir string, dev gotch.Device) (*DefragPolicy, error) {
	net, m, err := LoadCheckpoint(dir, dev)
	if err != nil {
		return nil, err
	}
	if net.Arch.Env != env.DefragName || net.Arch.FeatureSpec != env.DefragSpec {
		return nil, fmt.Errorf("checkpoint %s: a %s network (feature spec %s) cannot plan migrations (want %s, %s)",
			dir, net.Arch.Env, net.Arch.FeatureSpec, env.DefragName, env.DefragSpec)
	}
	return &DefragPolicy{Net: net, Manifest: m, Label: "model", dev: dev}, nil
}

// NewDefragPolicy plans with net, a defrag network on dev (e.g. one being fine-tuned: the
// plans use its weights as they are when each plan is made).
func NewDefragPolicy(net *Net, dev gotch.Device, label string) *DefragPolicy {
	return &DefragPolicy{Net: net, Label: label, dev: dev}
}

// Name is the planning method's name.
func (p *DefragPolicy) Name() string { return p.Label }

// Propose runs one episode of the defrag environment: sample 0 takes the best allowed
// candidate at every decision (greedy decoding), sample k > 0 draws each from the masked
// softmax with rng, so defrag.Best keeps the best of K plans.
func (p *DefragPolicy) Propose(pr defrag.Problem, sample int, rng *rand.Rand) ([]defrag.Migration, error) {
	ch := &chooser{p: p, sampled: sample > 0}
	return defrag.Agent{Label: p.Label, Choose: ch.choose}.Propose(pr, sample, rng)
}

// chooser holds one episode's buffers. Identical candidate rows (idle nodes of one model,
// tasks of one shape on equal nodes) are scored once, as the checkpoint placer does.
type chooser struct {
	p       *DefragPolicy
	sampled bool
	rows    NodeRows
	merged  env.Observation
	scorer  *scorer
	logits  []float32 // per merged row
	cand    []float32 // per candidate
}

func (c *chooser) choose(obs *env.Observation, rng *rand.Rand) (env.Action, error) {
	if err := c.score(obs); err != nil {
		return env.Action{}, err
	}
	var i int
	if c.sampled {
		i = sampleMasked(c.cand, obs.Mask, rng)
	} else {
		i = greedyChoice(c.cand, obs.Mask, obs.Stage)
	}
	if i < 0 {
		return env.Action{}, fmt.Errorf("%s: no allowed candidate at stage %d", c.p.Label, obs.Stage)
	}
	return env.Action{Candidate: i}, nil
}

// greedyChoice is greedy decoding's candidate. In stage one STOP (the last candidate) is one
// branch and the tasks together are the other: the masked softmax factorises into P(STOP) and
// P(task | migrate), so the greedy act/stop decision is P(STOP) >= 1/2, and only a migration
// takes the likeliest task. A plain argmax would stop whenever STOP outweighs every single task,
// even when migrating is far likelier than stopping (a clone of an expert that acts in half its
// invocations, spreading its picks over many tasks, would never act). Stage two is the argmax.
func greedyChoice(logits []float32, mask []bool, stage int) int {
	stop := len(mask) - 1
	if stage != 0 || stop < 0 || !mask[stop] {
		return argmaxFeasible(logits, mask, nil)
	}
	top := float64(logits[stop])
	for i, ok := range mask {
		if ok {
			top = math.Max(top, float64(logits[i]))
		}
	}
	var migrate float64
	for i, ok := range mask[:stop] {
		if ok {
			migrate += math.Exp(float64(logits[i]) - top)
		}
	}
	if migrate <= math.Exp(float64(logits[stop])-top) {
		return stop
	}
	return argmaxFeasible(logits[:stop], mask[:stop], nil)
}

// score fills c.cand with the network's logit of every candidate of obs.
func (c *chooser) score(obs *env.Observation) error {
	net := c.p.Net
	nodeDim := net.Arch.NodeDim
	if len(obs.Nodes) != obs.NumNodes*nodeDim || len(obs.Task) != net.Arch.TaskDim || len(obs.Global) != net.Arch.GlobalDim {
		return fmt.Errorf("%s: observation has %d x %d node, %d task and %d global features, network wants %d, %d, %d",
			c.p.Label, obs.NumNodes, len(obs.Nodes)/max(1, obs.NumNodes), len(obs.Task), len(obs.Global), nodeDim, net.Arch.TaskDim, net.Arch.GlobalDim)
	}
	c.rows.Merge(obs, nodeDim, &c.merged)
	var err error
	if c.p.dev == gotch.CPU {
		if c.scorer == nil {
			c.scorer = &scorer{net: net}
		}
		NoGrad(func() { c.logits, err = c.scorer.scores(&c.merged, c.rows.Count, c.logits) })
	} else {
		NoGrad(func() {
			in := c.rows.Input(&c.merged, nodeDim, c.p.dev)
			out := net.Forward(in)
			in.Drop()
			c.logits = HostFloats(out.Logits, c.logits)
			out.Drop()
		})
	}
	if err != nil {
		return err
	}
	c.cand = c.rows.Expand(c.logits, c.cand)
	return nil
}

// sampleMasked draws an allowed index with probability softmax(logits) over the allowed ones;
// -1 when none is allowed.
func sampleMasked(logits []float32, mask []bool, rng *rand.Rand) int {
	top := math.Inf(-1)
	for i, ok := range mask {
		if ok {
			top = math.Max(top, float64(logits[i]))
		}
	}
	if math.IsInf(top, -1) {
		return -1
	}
	var sum float64
	for i, ok := range mask {
		if ok {
			sum += math.Exp(float64(logits[i]) - top)
		}
	}
	u, last := rng.Float64()*sum, -1
	for i, ok := range mask {
		if !ok {
			continue
		}
		last = i
		if u -= math.Exp(float64(logits[i]) - top); u < 0 {
			return i
		}
	}
	return last // rounding left u a hair above zero
}
