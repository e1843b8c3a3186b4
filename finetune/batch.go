package finetune

import (
	"math"

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
	count []float32    // nodes per row
	rows  *nn.RowIndex // numbers the rows: the compactor's
	ids   []int32      // each row's id in rows

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

// compact stores obs into s with one row per distinct (features, mask) pair, numbered.
func (c *compactor) compact(obs *env.Observation, nodeDim int, s *sample) {
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
}

// batch is samples padded to their widest row count, on the network's device, each distinct
// node row once. Padding rows have a false mask and a zero count, so they neither get
// probability nor enter pooling.
type batch struct {
	in       *nn.Input
	logCount *ts.Tensor // [B, N]: log of each row's multiplicity (0 on padding)
	width    int
}

// newBatch builds a batch of samples.
func newBatch(samples []*sample, dev gotch.Device) *batch {
	width := 0
	obs := make([]nn.Observation, len(samples))
	for j, s := range samples {
		width = max(width, s.obs.NumNodes)
		obs[j] = nn.Observation{Rows: s.rows, IDs: s.ids, Mask: s.obs.Mask, Count: s.count, Task: s.obs.Task, Global: s.obs.Global}
	}
	logCount := make([]float32, len(samples)*width)
	for j, s := range samples {
		for i, c := range s.count {
			logCount[j*width+i] = logOf(c)
		}
	}
	return &batch{
		in:       nn.BatchInput(obs, dev),
		logCount: nn.HostTensor(logCount, []int64{int64(len(samples)), int64(width)}, dev),
		width:    width,
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
	b.logCount.MustDrop()
}

// logProbs is the log-probability of each row: the network's logits over the temperature
// (nn.MaskedLogit on infeasible and padding rows, so their probability is exactly 0) plus the
// log of the row's multiplicity, normalised.
func (b *batch) logProbs(logits *ts.Tensor, temperature float64) *ts.Tensor {
	if temperature == 1 {
		return logits.MustAdd(b.logCount, false).MustLogSoftmax(-1, gotch.Float, true)
	}
	scaled := logits.MustDivScalar(ts.FloatScalar(temperature), false)
	defer scaled.MustDrop()
	return scaled.MustAdd(b.logCount, false).MustLogSoftmax(-1, gotch.Float, true)
}
