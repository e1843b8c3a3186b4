package pretrain

import (
	"fmt"
	"math"
	"slices"

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
		ds, err := datasets.OpenEnv(c.ValDataset, train.Manifest.Env)
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

// valMetrics accumulates validation decisions, in all and per stage.
type valMetrics struct {
	n, agree, same int
	ce, value      float64 // sums
	stages         []stageCount
}

type stageCount struct{ n, agree, same int }

func (m valMetrics) agreement() float64 { return float64(m.agree) / float64(max(1, m.n)) }
func (m valMetrics) exact() float64     { return float64(m.same) / float64(max(1, m.n)) }

func (m *valMetrics) add(stage int, agree, same bool) {
	for len(m.stages) <= stage {
		m.stages = append(m.stages, stageCount{})
	}
	st := &m.stages[stage]
	m.n++
	st.n++
	if agree {
		m.agree++
		st.agree++
	}
	if same {
		m.same++
		st.same++
	}
}

// perStage is the per-stage agreement of a multi-stage environment (nil for placement).
func (m valMetrics) perStage() []StageMetrics {
	if len(m.stages) < 2 {
		return nil
	}
	out := make([]StageMetrics, len(m.stages))
	for i, st := range m.stages {
		out[i] = StageMetrics{Stage: i, Samples: st.n, Agreement: float64(st.agree) / float64(max(1, st.n)),
			Exact: float64(st.same) / float64(max(1, st.n))}
	}
	return out
}

// judge decides, for each decision of an episode in order, whether the network's choice is
// as good as the expert's; scored is false for decisions validation skips (a judge that
// replays the episode still has to see them).
type judge func(smp *datasets.Sample, choice int, scored bool) (bool, error)

// judges make the validation judge of the environments whose judge is more than sameRow,
// by environment name: each registers its own (registerJudge) beside its cloning.
var judges = map[string]func(t *trainer, ep datasets.EpisodeInfo) (judge, error){}

// registerJudge adds the judge maker of the environment name; a second one is a programming
// error.
func registerJudge(name string, mk func(t *trainer, ep datasets.EpisodeInfo) (judge, error)) {
	if _, dup := judges[name]; dup {
		panic("pretrain: judge of " + name + " registered twice")
	}
	judges[name] = mk
}

// newJudge returns the episode's judge: its environment's registered one, else sameRow.
func (t *trainer) newJudge(ep datasets.EpisodeInfo) (judge, error) {
	if mk, ok := judges[t.val.ds.Manifest.Env]; ok {
		return mk(t, ep)
	}
	return sameRow, nil
}

// expertJudge is placement's judge: the expert's own score on the cluster as the expert saw it
// (replayed here beside the dataset's replay).
func expertJudge(t *trainer, ep datasets.EpisodeInfo) (judge, error) {
	expert, err := policy.NewPlacer(t.cfg.Expert)
	if err != nil {
		return nil, fmt.Errorf("pretrain.expert: %w", err)
	}
	ctx, err := t.val.ds.Context(ep)
	if err != nil {
		return nil, err
	}
	c, err := ctx.Cluster()
	if err != nil {
		return nil, fmt.Errorf("dataset %s: episode %d: %w", t.val.ds.Dir, ep.ID, err)
	}
	return func(smp *datasets.Sample, choice int, scored bool) (bool, error) {
		if err := smp.Row.ApplyChanges(c); err != nil {
			return false, err
		}
		task := smp.Row.Task()
		chosen := sim.Choice{Node: int(smp.Row.Action), GPUs: sim.GPUSet(smp.Row.ActionGPUs)}
		defer c.Place(task, chosen) // ReadEpisode's replay has checked it
		if !scored {
			return false, nil
		}
		return choice >= 0 && nodeScore(expert, c, task, choice) >= expert.Score(c, task, chosen), nil
	}, nil
}

// sameRow is the judge of the other environments (defrag): whether the chosen candidate's row
// is the expert's row bit for bit — an identical row is the same (node, task) situation, which
// no policy over these features can tell apart.
func sameRow(smp *datasets.Sample, choice int, _ bool) (bool, error) {
	o := &smp.Obs
	nf := len(o.Nodes) / max(1, o.NumNodes)
	a := int(smp.Row.Action)
	return choice >= 0 && slices.Equal(o.Nodes[choice*nf:(choice+1)*nf], o.Nodes[a*nf:(a+1)*nf]), nil
}

// validate scores every validation decision: the network's choice (its best feasible
// candidate, first on exact ties) against the expert's, the episode's judge deciding whether
// two different candidates are equally good. Decisions go through the network one at a time,
// on the state the expert saw.
func (t *trainer) validate() (valMetrics, error) {
	var m valMetrics
	hb := nn.NewHostBatch(t.net.Arch, 1, t.val.ds.MaxNodes())
	var logits, values []float32
	for _, ep := range t.val.eps {
		agrees, err := t.newJudge(ep)
		if err != nil {
			return m, err
		}
		err = t.val.ds.ReadEpisode(ep, func(smp *datasets.Sample) error {
			if !t.val.picked(int64(smp.Row.Step), ep.Rows) {
				_, err := agrees(smp, -1, false)
				return err
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
			ok, err := agrees(smp, choice, true)
			if err != nil {
				return err
			}
			m.add(int(smp.Row.Stage), choice == action || ok, choice == action)
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
