package pretrain

import (
	"fmt"
	"math"
	"slices"

	"github.com/schedrl/schedrl/datasets"
	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/nn"
)

// valBatch is the number of decisions scored per validation forward pass.
const valBatch = 64

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

// scorer evaluates batches of validation decisions.
type scorer struct {
	t       *trainer
	hb      *nn.HostBatch
	actions []int32
	rtg     []float32
	fd      int // index of the frag_delta node feature; -1 when the spec has none
	m       valMetrics
	logits  []float32
	values  []float32
}

// validate scores every validation decision: the network's choice (its best feasible node,
// first on exact ties) against the expert's.
func (t *trainer) validate() (valMetrics, error) {
	spec, err := env.SpecOf(t.val.ds.Manifest.Env)
	if err != nil {
		return valMetrics{}, err
	}
	s := &scorer{t: t, hb: nn.NewHostBatch(t.net.Arch, valBatch, t.val.ds.MaxNodes()), fd: slices.Index(spec.Node, "frag_delta")}
	s.hb.Size = 0
	for _, ep := range t.val.eps {
		err := t.val.ds.ReadEpisode(ep, func(smp *datasets.Sample) error {
			if !t.val.picked(int64(smp.Row.Step), ep.Rows) {
				return nil
			}
			if err := s.hb.Put(s.hb.Size, &smp.Obs); err != nil {
				return err
			}
			s.hb.Size++
			s.actions = append(s.actions, smp.Row.Action)
			s.rtg = append(s.rtg, smp.Row.ReturnToGo)
			if s.hb.Size == valBatch {
				s.flush()
			}
			return nil
		})
		if err != nil {
			return valMetrics{}, err
		}
	}
	s.flush()
	return s.m, nil
}

// flush scores the decisions gathered so far.
func (s *scorer) flush() {
	hb := s.hb
	if hb.Size == 0 {
		return
	}
	var width int
	nn.NoGrad(func() {
		in := hb.Tensors(s.t.dev)
		width = int(in.Nodes.MustSize()[1])
		out := s.t.net.Forward(in)
		in.Drop()
		s.logits, s.values = nn.HostFloats(out.Logits, s.logits), nn.HostFloats(out.Value, s.values)
		out.Drop()
	})
	scale := s.t.net.Arch.ValueScale
	for j := range hb.Size {
		n := int(hb.NumNodes[j])
		logits := s.logits[j*width : j*width+n]
		mask := hb.Mask[j*hb.MaxNodes : j*hb.MaxNodes+n]
		choice, expert := argmax(logits, mask), int(s.actions[j])
		s.m.n++
		if choice == expert {
			s.m.same++
		}
		if s.tied(j, choice, expert) {
			s.m.agree++
		}
		s.m.ce += logSumExp(logits, mask) - float64(logits[expert])
		d := (float64(s.values[j]) - float64(s.rtg[j])) / scale
		s.m.value += d * d
	}
	hb.Size, s.actions, s.rtg = 0, s.actions[:0], s.rtg[:0]
}

// tied reports whether node choice is as good as the expert's under the expert's own score:
// the same node, an identical node row, or (FGD) the same fragment change.
func (s *scorer) tied(j, choice, expert int) bool {
	if choice == expert {
		return true
	}
	if choice < 0 {
		return false
	}
	nd := s.hb.NodeDim
	base := j * s.hb.MaxNodes * nd
	a := s.hb.Nodes[base+choice*nd : base+(choice+1)*nd]
	b := s.hb.Nodes[base+expert*nd : base+(expert+1)*nd]
	if slices.Equal(a, b) {
		return true
	}
	return s.fd >= 0 && math.Abs(float64(a[s.fd]-b[s.fd])) <= 1e-6
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
