package pretrain

import (
	"fmt"
	"math"

	"github.com/schedrl/schedrl/datasets"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/nn"
	"github.com/schedrl/schedrl/policy"
	"github.com/schedrl/schedrl/sim"
)

// valSet is the validation episodes: the dataset's val split, or every episode of
// val_dataset when one is set.
type valSet struct {
	ds  *datasets.Dataset
	eps []datasets.EpisodeInfo
	max int // decisions per episode, spread evenly; 0: all
}

func openVal(c config.PretrainConfig, train *datasets.Dataset) (valSet, error) {
	v := valSet{ds: train, eps: train.Episodes(datasets.SplitVal), max: c.ValMaxSamples}
	if c.ValDataset != "" {
		ds, err := datasets.Open(c.ValDataset)
		if err != nil {
			return v, err
		}
		v.ds, v.eps = ds, ds.Manifest.Episodes
	}
	if len(v.eps) == 0 {
		return v, fmt.Errorf("pretrain: no validation episodes (dataset %s has an empty val split; set val_dataset or rebuild with val_fraction > 0)", c.Dataset)
	}
	return v, nil
}

func (v valSet) rows() int64 {
	var n int64
	for _, ep := range v.eps {
		if v.max > 0 {
			n += min(ep.Rows, int64(v.max))
		} else {
			n += ep.Rows
		}
	}
	return n
}

// picked reports whether step s of an episode of rows decisions is validated: max of them,
// spread evenly over the episode (early, empty-cluster decisions are the easy ones).
func (v valSet) picked(s, rows int64) bool {
	if v.max <= 0 || rows <= int64(v.max) {
		return true
	}
	m := int64(v.max)
	return (s+1)*m/rows > s*m/rows
}

// valMetrics accumulates validation decisions.
type valMetrics struct {
	n, agree, same int
	ce, value      float64 // sums
}

func (m valMetrics) agreement() float64 { return float64(m.agree) / float64(max(1, m.n)) }
func (m valMetrics) exact() float64     { return float64(m.same) / float64(max(1, m.n)) }

// validate scores every validation decision: the network's choice (its best feasible node,
// first on exact ties) against the expert's, the expert's own score deciding whether two
// different nodes are equally good. The episode's cluster is replayed here beside the
// dataset's replay, so each decision is scored on the cluster as the expert saw it; that is
// why decisions go through the network one at a time.
func (t *trainer) validate() (valMetrics, error) {
	expert, err := policy.NewPlacer(t.cfg.Expert)
	if err != nil {
		return valMetrics{}, fmt.Errorf("pretrain.expert: %w", err)
	}
	var m valMetrics
	hb := nn.NewHostBatch(t.net.Arch, 1, t.val.ds.MaxNodes())
	var logits, values []float32
	for _, ep := range t.val.eps {
		ctx, err := t.val.ds.Context(ep)
		if err != nil {
			return m, err
		}
		c, err := ctx.Cluster()
		if err != nil {
			return m, fmt.Errorf("dataset %s: episode %d: %w", t.val.ds.Dir, ep.ID, err)
		}
		err = t.val.ds.ReadEpisode(ep, func(smp *datasets.Sample) error {
			if err := smp.Row.ApplyChanges(c); err != nil {
				return err
			}
			task := smp.Row.Task()
			chosen := sim.Choice{Node: int(smp.Row.Action), GPUs: sim.GPUSet(smp.Row.ActionGPUs)}
			defer c.Place(task, chosen) // ReadEpisode's replay has checked it
			if !t.val.picked(int64(smp.Row.Step), ep.Rows) {
				return nil
			}
			if err := hb.Put(0, &smp.Obs); err != nil {
				return err
			}
			nn.NoGrad(func() {
				in := hb.Tensors(t.dev)
				out := t.net.Forward(in)
				in.Drop()
				logits, values = nn.HostFloats(out.Logits, logits), nn.HostFloats(out.Value, values)
				out.Drop()
			})
			mask := smp.Obs.Mask
			choice, action := argmax(logits, mask), int(smp.Row.Action)
			m.n++
			if choice == action {
				m.same++
			}
			if choice == action || choice >= 0 && nodeScore(expert, c, task, choice) >= expert.Score(c, task, chosen) {
				m.agree++
			}
			m.ce += logSumExp(logits, mask) - float64(logits[action])
			d := (float64(values[0]) - float64(smp.Row.ReturnToGo)) / t.net.Arch.ValueScale
			m.value += d * d
			return nil
		})
		if err != nil {
			return m, err
		}
	}
	return m, nil
}

// nodeScore is the expert's best score for t on node i over the node's GPU choices.
func nodeScore(expert policy.Placer, c *sim.Cluster, t sim.Task, i int) float64 {
	if t.NumGPU == 0 {
		return expert.Score(c, t, sim.Choice{Node: i})
	}
	best := math.Inf(-1)
	if set, ok := c.TightestGPUs(t, i); ok {
		best = expert.Score(c, t, sim.Choice{Node: i, GPUs: set})
	}
	if t.Sharing() {
		free := c.Free(i)
		for g := range free.GPUs {
			if free.GPU[g] >= t.GPUMilli {
				best = math.Max(best, expert.Score(c, t, sim.Choice{Node: i, GPUs: sim.NewGPUSet(g)}))
			}
		}
	}
	return best
}

// argmax is the first feasible index with the largest logit (-1 when none is feasible).
func argmax(logits []float32, mask []bool) int {
	best := -1
	for i, ok := range mask {
		if ok && (best < 0 || logits[i] > logits[best]) {
			best = i
		}
	}
	return best
}

// logSumExp is log sum exp over the feasible logits.
func logSumExp(logits []float32, mask []bool) float64 {
	top := math.Inf(-1)
	for i, ok := range mask {
		if ok {
			top = math.Max(top, float64(logits[i]))
		}
	}
	var sum float64
	for i, ok := range mask {
		if ok {
			sum += math.Exp(float64(logits[i]) - top)
		}
	}
	return top + math.Log(sum)
}
