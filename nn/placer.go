package nn

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"

	"github.com/sugarme/gotch"

	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/internal/checkpoint"
	"github.com/schedrl/schedrl/sim"
)

// Policy is a loaded placement checkpoint. It hands out placers that share its (read-only)
// network, so concurrent simulator runs need one load.
type Policy struct {
	Net      *Net
	Manifest checkpoint.Manifest
	name     string
	dev      gotch.Device
}

// LoadPolicy loads the placement checkpoint in dir onto dev.
func LoadPolicy(dir string, dev gotch.Device) (*Policy, error) {
	net, m, err := LoadCheckpoint(dir, dev)
	if err != nil {
		return nil, err
	}
	if net.Arch.Env != env.PlacementName {
		return nil, fmt.Errorf("checkpoint %s: a %s network cannot place tasks (want %s)", dir, net.Arch.Env, env.PlacementName)
	}
	return &Policy{Net: net, Manifest: m, name: "ckpt:" + filepath.Base(filepath.Clean(dir)), dev: dev}, nil
}

// NewPlacer returns a placer with its own buffers; it implements sim.Placer like the heuristics.
func (p *Policy) NewPlacer() sim.Placer { return &placer{p: p} }

// placer encodes each decision with the placement environment (the encoding the network was
// trained on), scores every node in one forward pass over the distinct node rows, and takes the
// best feasible node; GPUs within the node are the environment's least-fragmenting choice, as
// in the training data.
type placer struct {
	p         *Policy
	clusterID uint64
	env       *env.Placement
	arrived   int64 // GPU milli of the tasks offered so far on this cluster, failed ones included
	// offered holds each task's arrived count at its first offer: in the timed world a waiting
	// task is offered again, and counting it again would drift from the datasets' count, which
	// counts each task once, at its arrival.
	offered   map[string]int64
	obs       env.Observation
	rows      NodeRows
	merged    env.Observation
	scorer    *scorer   // CPU inference path; nil on other devices (Forward over merged rows)
	logits    []float32 // per row
	nodeLogit []float32 // per node
}

func (pl *placer) Name() string { return pl.p.name }

// Place picks the feasible node with the highest logit (with the network's tie prior); exact
// ties (identical node rows without a prior) are broken uniformly with rng.
func (pl *placer) Place(c *sim.Cluster, t sim.Task, rng *rand.Rand) (sim.Choice, bool) {
	if pl.env == nil || pl.clusterID != c.ID() {
		opts := env.DefaultOptions()
		opts.Candidates = pl.p.Net.Arch.Candidates
		pl.env, pl.clusterID, pl.arrived, pl.offered = env.NewPlacement(c, opts), c.ID(), 0, map[string]int64{}
	}
	before, seen := pl.offered[t.Name]
	if !seen || t.Name == "" {
		before = pl.arrived
		pl.arrived += t.TotalGPUMilli()
		if t.Name != "" {
			pl.offered[t.Name] = before
		}
	}
	if pl.env.Present(t, before) == 0 {
		return sim.Choice{}, false
	}
	pl.env.Observe(&pl.obs)
	best := pl.choose(rng)
	ch, err := pl.env.Choice(env.Action{Candidate: best})
	if err != nil { // cannot happen: best is feasible by the mask; refuse rather than guess
		return sim.Choice{}, false
	}
	return ch, true
}

// choose runs the network on the encoded decision and returns the best feasible node. The
// row scores are mapped back to nodes before the argmax, so ties among identical nodes are
// broken over nodes, drawing from rng exactly as a forward pass over every node would.
func (pl *placer) choose(rng *rand.Rand) int {
	p, obs := pl.p, &pl.obs
	nodeDim := p.Net.Arch.NodeDim
	pl.rows.Merge(obs, nodeDim, &pl.merged)
	if p.dev == gotch.CPU {
		if pl.scorer == nil {
			pl.scorer = &scorer{net: p.Net}
		}
		var err error
		NoGrad(func() { pl.logits, err = pl.scorer.scores(&pl.merged, pl.rows.Count, pl.logits) })
		if err != nil {
			panic(err) // shapes were checked at load; only a broken libtorch gets here
		}
	} else {
		NoGrad(func() {
			in := pl.rows.Input(&pl.merged, nodeDim, p.dev)
			out := p.Net.Forward(in)
			in.Drop()
			pl.logits = HostFloats(out.Logits, pl.logits)
			out.Drop()
		})
	}
	pl.nodeLogit = p.Net.Arch.WithTiePrior(pl.rows.Expand(pl.logits, pl.nodeLogit), obs.TiePref)
	return argmaxFeasible(pl.nodeLogit, obs.Mask, rng)
}

// argmaxFeasible returns the feasible index with the largest logit, uniformly among exact ties
// (rng nil: the first); -1 when nothing is feasible.
func argmaxFeasible(logits []float32, mask []bool, rng *rand.Rand) int {
	best, ties := -1, 0
	for i, ok := range mask {
		if !ok {
			continue
		}
		switch {
		case best < 0 || logits[i] > logits[best]:
			best, ties = i, 1
		case logits[i] == logits[best]:
			ties++
			if rng != nil && rng.IntN(ties) == 0 {
				best = i
			}
		}
	}
	return best
}
