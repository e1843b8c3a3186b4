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
	count []float32 // nodes per row

	action int
	logp   float32 // log-probability of action's row under the rollout policy
	value  float32
	reward float32
	done   bool // the step ended the episode
}

// compactor merges identical node rows (nn.NodeRows, the placer's merging) and keeps each
// row's nodes for mapping row logits back to nodes.
type compactor struct {
	rows    nn.NodeRows
	members [][]int // node indices of each row
}

// compact stores obs into s with one row per distinct (features, mask) pair.
func (c *compactor) compact(obs *env.Observation, nodeDim int, s *sample) {
	c.rows.Merge(obs, nodeDim, &s.obs)
	s.count = append(s.count[:0], c.rows.Count...)
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

// batch is samples padded to their widest row count, on the network's device. Padding rows
// have a false mask and a zero count, so they neither get probability nor enter pooling.
type batch struct {
	in       *nn.Input
	logCount *ts.Tensor // [B, N]: log of each row's multiplicity (0 on padding)
	width    int
}

func newBatch(arch nn.Arch, samples []*sample, dev gotch.Device) *batch {
	width := 0
	for _, s := range samples {
		width = max(width, s.obs.NumNodes)
	}
	b, nd := len(samples), arch.NodeDim
	nodes := make([]float32, b*width*nd)
	mask := make([]bool, b*width)
	valid := make([]float32, b*width)
	logCount := make([]float32, b*width)
	task := make([]float32, 0, b*arch.TaskDim)
	global := make([]float32, 0, b*arch.GlobalDim)
	for j, s := range samples {
		copy(nodes[j*width*nd:], s.obs.Nodes)
		copy(mask[j*width:], s.obs.Mask)
		copy(valid[j*width:], s.count)
		for i, c := range s.count {
			logCount[j*width+i] = float32(math.Log(float64(c)))
		}
		task = append(task, s.obs.Task...)
		global = append(global, s.obs.Global...)
	}
	B, N := int64(b), int64(width)
	return &batch{
		in: &nn.Input{
			Nodes:  nn.HostTensor(nodes, []int64{B, N, int64(nd)}, dev),
			Task:   nn.HostTensor(task, []int64{B, int64(arch.TaskDim)}, dev),
			Global: nn.HostTensor(global, []int64{B, int64(arch.GlobalDim)}, dev),
			Mask:   nn.HostTensor(mask, []int64{B, N}, dev),
			Valid:  nn.HostTensor(valid, []int64{B, N}, dev),
		},
		logCount: nn.HostTensor(logCount, []int64{B, N}, dev),
		width:    width,
	}
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
