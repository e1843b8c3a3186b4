package finetune

import (
	"math"
	"math/rand/v2"

	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/nn"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// sample is one stored decision: its observation (copied out of the env's reused buffers)
// and what the rollout did with it. Rows of obs may stand for several identical nodes
// (count); action is a row.
type sample struct {
	obs   env.Observation
	count []float32 // nodes per row
	// weight is each row's log prior mass: log sum over its nodes of exp(tie scale x the
	// node's tie preference), log count without a tie prior. The policy samples a row with
	// probability proportional to exp(logit / temperature + weight).
	weight []float32
	rows   *nn.RowIndex // numbers the rows: the compactor's
	ids    []int32      // each row's id in rows

	action int
	logp   float32 // log-probability of action's row under the rollout policy
	value  float32
	reward float32
	done   bool // the step ended the episode
}

// compactor merges identical node rows (nn.NodeRows, the placer's merging), keeps each
// row's nodes for mapping row logits back to nodes, and numbers the rows of every observation
// it compacts since the last forget (an environment's consecutive decisions share most rows).
type compactor struct {
	rows    nn.NodeRows
	members [][]int // node indices of each row
	index   nn.RowIndex
	started bool // index has been reset for this numbering
}

// forget starts a new numbering: ids given before are not to be used again.
func (c *compactor) forget() { c.started = false }

// compact stores obs into s with one row per distinct (features, mask) pair, numbered, and
// weighs the rows for a policy whose tie prior over its temperature is tieScale.
func (c *compactor) compact(obs *env.Observation, nodeDim int, s *sample, tieScale float64) {
	if !c.started {
		c.index.Reset(nodeDim)
		c.started = true
	}
	c.rows.Merge(obs, nodeDim, &s.obs)
	s.count = append(s.count[:0], c.rows.Count...)
	s.rows, s.ids = &c.index, c.index.Add(&s.obs, s.ids[:0])
	for len(c.members) < len(s.count) {
		c.members = append(c.members, nil)
	}
	c.members = c.members[:len(s.count)]
	for r := range c.members {
		c.members[r] = c.members[r][:0]
	}
	for i, r := range c.rows.Of {
		c.members[r] = append(c.members[r], i)
	}
	s.weight = s.weight[:0]
	for r, members := range c.members {
		s.weight = append(s.weight, logMass(members, obs.TiePref, tieScale, s.count[r]))
	}
}

// logMass is log sum over nodes of exp(scale x pref[node]): the log prior mass of a row of
// identical nodes (log count when there is no prior).
func logMass(nodes []int, pref []float32, scale float64, count float32) float32 {
	if scale == 0 || len(pref) == 0 {
		return logOf(count)
	}
	top, sum := mass(nodes, pref, scale)
	return float32(top + math.Log(sum))
}

// pickNode is the node of a row a sampled action goes to: drawn in proportion to exp(scale x
// tie preference), uniformly without a prior.
func pickNode(nodes []int, pref []float32, scale float64, rng *rand.Rand) int {
	if len(nodes) == 1 {
		return nodes[0]
	}
	if scale == 0 || len(pref) == 0 {
		return nodes[rng.IntN(len(nodes))]
	}
	top, sum := mass(nodes, pref, scale)
	u := rng.Float64() * sum
	for _, i := range nodes {
		if u -= math.Exp(scale*float64(pref[i]) - top); u < 0 {
			return i
		}
	}
	return nodes[len(nodes)-1]
}

// mass is the prior mass of nodes, sum of exp(scale x pref[node]), as exp(top) x sum with top
// the largest exponent, so that nothing overflows.
func mass(nodes []int, pref []float32, scale float64) (top, sum float64) {
	top = math.Inf(-1)
	for _, i := range nodes {
		top = math.Max(top, scale*float64(pref[i]))
	}
	for _, i := range nodes {
		sum += math.Exp(scale*float64(pref[i]) - top)
	}
	return top, sum
}

// batch is samples padded to their widest row count, on the network's device, each distinct
// node row once. Padding rows have a false mask and a zero count, so they neither get
// probability nor enter pooling.
type batch struct {
	in     *nn.Input
	weight *ts.Tensor // [B, N]: each row's log prior mass (sample.weight; 0 on padding)
	width  int
}

// newBatch builds a batch of samples.
func newBatch(samples []*sample, dev gotch.Device) *batch {
	width := 0
	obs := make([]nn.Observation, len(samples))
	for j, s := range samples {
		width = max(width, s.obs.NumNodes)
		obs[j] = nn.Observation{Rows: s.rows, IDs: s.ids, Mask: s.obs.Mask, Count: s.count, Task: s.obs.Task, Global: s.obs.Global}
	}
	weight := make([]float32, len(samples)*width)
	for j, s := range samples {
		copy(weight[j*width:], s.weight)
	}
	return &batch{
		in:     nn.BatchInput(obs, dev),
		weight: nn.HostTensor(weight, []int64{int64(len(samples)), int64(width)}, dev),
		width:  width,
	}
}

// logInts caches the log of the small integers row counts are: math.Log was 2% of an update.
var logInts = func() [4096]float32 {
	var t [4096]float32
	for i := 1; i < len(t); i++ {
		t[i] = float32(math.Log(float64(i)))
	}
	return t
}()

func logOf(count float32) float32 {
	if i := int(count); float32(i) == count && i > 0 && i < len(logInts) {
		return logInts[i]
	}
	return float32(math.Log(float64(count)))
}

func (b *batch) drop() {
	b.in.Drop()
	b.weight.MustDrop()
}

// logProbs is the log-probability of each row: the network's logits over the temperature
// (nn.MaskedLogit on infeasible and padding rows, so their probability is exactly 0) plus the
// row's log prior mass, normalised.
func (b *batch) logProbs(logits *ts.Tensor, temperature float64) *ts.Tensor {
	if temperature == 1 {
		return logits.MustAdd(b.weight, false).MustLogSoftmax(-1, gotch.Float, true)
	}
	scaled := logits.MustDivScalar(ts.FloatScalar(temperature), false)
	defer scaled.MustDrop()
	return scaled.MustAdd(b.weight, false).MustLogSoftmax(-1, gotch.Float, true)
}
