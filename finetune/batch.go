package finetune

import (
	"math"
	"unsafe"

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

// store copies obs into s, one row per node, reusing s's buffers.
func (s *sample) store(obs *env.Observation) {
	o := &s.obs
	o.Stage, o.NumNodes = obs.Stage, obs.NumNodes
	o.Nodes = append(o.Nodes[:0], obs.Nodes...)
	o.Mask = append(o.Mask[:0], obs.Mask...)
	o.Task = append(o.Task[:0], obs.Task...)
	o.Global = append(o.Global[:0], obs.Global...)
	s.count = s.count[:0]
	for range obs.NumNodes {
		s.count = append(s.count, 1)
	}
}

// compactor merges identical node rows. A cluster holds hundreds of nodes in the same state
// (idle nodes of one model, above all), and the entity network scores identical rows
// identically, so sending each distinct row once with its multiplicity gives the same policy
// over nodes at a fraction of the cost: on the 1213-node openb cluster an FGD-like episode
// has 137 distinct rows per decision on average.
type compactor struct {
	index   map[string]int
	members [][]int // node indices of each row
}

// compact stores obs into s with one row per distinct (features, mask) pair.
func (c *compactor) compact(obs *env.Observation, nodeDim int, s *sample) {
	if c.index == nil {
		c.index = map[string]int{}
	}
	clear(c.index)
	c.members = c.members[:0]
	o := &s.obs
	o.Stage = obs.Stage
	o.Nodes, o.Mask, s.count = o.Nodes[:0], o.Mask[:0], s.count[:0]
	key := make([]byte, nodeDim*4+1)
	for i := range obs.NumNodes {
		row := obs.Nodes[i*nodeDim : (i+1)*nodeDim]
		copy(key, unsafe.Slice((*byte)(unsafe.Pointer(&row[0])), nodeDim*4))
		key[nodeDim*4] = 0
		if obs.Mask[i] {
			key[nodeDim*4] = 1
		}
		r, ok := c.index[string(key)]
		if !ok {
			r = len(s.count)
			c.index[string(key)] = r
			o.Nodes = append(o.Nodes, row...)
			o.Mask = append(o.Mask, obs.Mask[i])
			s.count = append(s.count, 0)
			if r < cap(c.members) { // reuse the row's member list from an earlier call
				c.members = c.members[:r+1]
				c.members[r] = c.members[r][:0]
			} else {
				c.members = append(c.members, nil)
			}
		}
		s.count[r]++
		c.members[r] = append(c.members[r], i)
	}
	o.NumNodes = len(s.count)
	o.Task = append(o.Task[:0], obs.Task...)
	o.Global = append(o.Global[:0], obs.Global...)
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
			Nodes:  tensorOf(nodes, []int64{B, N, int64(nd)}, dev),
			Task:   tensorOf(task, []int64{B, int64(arch.TaskDim)}, dev),
			Global: tensorOf(global, []int64{B, int64(arch.GlobalDim)}, dev),
			Mask:   tensorOf(mask, []int64{B, N}, dev),
			Valid:  tensorOf(valid, []int64{B, N}, dev),
		},
		logCount: tensorOf(logCount, []int64{B, N}, dev),
		width:    width,
	}
}

func (b *batch) drop() {
	b.in.Drop()
	b.logCount.MustDrop()
}

// logProbs is the log-probability of each row: the network's logits (nn.MaskedLogit on
// infeasible and padding rows, so their probability is exactly 0) plus the log of the row's
// multiplicity, normalised.
func (b *batch) logProbs(logits *ts.Tensor) *ts.Tensor {
	return logits.MustAdd(b.logCount, false).MustLogSoftmax(-1, gotch.Float, true)
}

func tensorOf[T float32 | int64 | bool](data []T, shape []int64, dev gotch.Device) *ts.Tensor {
	t := ts.MustOfSlice(data).MustView(shape, true)
	if dev != gotch.CPU {
		t = t.MustTo(dev, true)
	}
	return t
}
