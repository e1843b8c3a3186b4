package nn

import (
	"fmt"
	"runtime"
	"unsafe"

	"github.com/sugarme/gotch"
	lib "github.com/sugarme/gotch/libtch"
	"github.com/sugarme/gotch/ts"

	"github.com/schedrl/schedrl/env"
)

// HostBatch is a batch of observations in host memory, padded to a common node count: the
// layout of datasets.Batch, and what rollouts fill from env observations with Put.
type HostBatch struct {
	Size, MaxNodes              int
	NodeDim, TaskDim, GlobalDim int
	NumNodes                    []int32   // Size
	Nodes                       []float32 // Size x MaxNodes x NodeDim; padding zero
	Mask                        []bool    // Size x MaxNodes; padding false
	Task                        []float32 // Size x TaskDim
	Global                      []float32 // Size x GlobalDim
}

// NewHostBatch allocates room for size observations of up to maxNodes nodes.
func NewHostBatch(a Arch, size, maxNodes int) *HostBatch {
	return &HostBatch{Size: size, MaxNodes: maxNodes, NodeDim: a.NodeDim, TaskDim: a.TaskDim, GlobalDim: a.GlobalDim,
		NumNodes: make([]int32, size), Nodes: make([]float32, size*maxNodes*a.NodeDim),
		Mask: make([]bool, size*maxNodes), Task: make([]float32, size*a.TaskDim), Global: make([]float32, size*a.GlobalDim)}
}

// Put copies obs into slot j, zeroing the padding beyond its nodes.
func (b *HostBatch) Put(j int, obs *env.Observation) error {
	n := obs.NumNodes
	switch {
	case n > b.MaxNodes:
		return fmt.Errorf("observation has %d nodes, batch holds %d", n, b.MaxNodes)
	case len(obs.Nodes) != n*b.NodeDim || len(obs.Task) != b.TaskDim || len(obs.Global) != b.GlobalDim:
		return fmt.Errorf("observation has %d node, %d task and %d global features, network wants %d, %d, %d",
			len(obs.Nodes)/max(n, 1), len(obs.Task), len(obs.Global), b.NodeDim, b.TaskDim, b.GlobalDim)
	}
	nodes := b.Nodes[j*b.MaxNodes*b.NodeDim : (j+1)*b.MaxNodes*b.NodeDim]
	clear(nodes[copy(nodes, obs.Nodes):])
	mask := b.Mask[j*b.MaxNodes : (j+1)*b.MaxNodes]
	clear(mask[copy(mask, obs.Mask[:n]):])
	copy(b.Task[j*b.TaskDim:(j+1)*b.TaskDim], obs.Task)
	copy(b.Global[j*b.GlobalDim:(j+1)*b.GlobalDim], obs.Global)
	b.NumNodes[j] = int32(n)
	return nil
}

// Input is a batch on the network's device. Each distinct node row is sent once (Rows): a PPO
// rollout's observations share most rows. The context pools read every candidate's row; the
// score head runs on feasible candidates only, a few percent of a busy cluster's rows.
type Input struct {
	Rows   *ts.Tensor // [U, NodeDim]: distinct node rows
	Task   *ts.Tensor // [B, TaskDim]
	Global *ts.Tensor // [B, GlobalDim]
	Mask   *ts.Tensor // [B, N] bool: feasible candidates
	// Index [B, N] is each candidate's row in Rows, U (past the last) on padding: the max
	// pool's layout without gradients.
	Index *ts.Tensor

	// Observation b's candidates are Pool[PoolStart[b]:PoolStart[b+1]] (rows of Rows), each
	// weighted in the mean by the nodes it stands for (PoolWeight; Count is their sum).
	Pool, PoolStart, PoolWeight, Count *ts.Tensor
	// Feasible [B, F] is the row of each feasible candidate, FeasibleAt [B, F] its column;
	// padding is row 0 and column N.
	Feasible, FeasibleAt *ts.Tensor
}

// HostInput is a batch in host memory, one column per candidate.
type HostInput struct {
	Size, Width  int
	Rows         []float32 // U x NodeDim
	Index        []int64   // Size x Width: each candidate's row in Rows (any value on padding)
	Task, Global []float32 // Size x TaskDim, Size x GlobalDim
	Mask         []bool    // Size x Width: feasible candidates; false on padding
	Valid        []float32 // Size x Width: nodes a candidate stands for (1 unmerged); 0 on padding
}

func newInput(h HostInput, nodeDim int, dev gotch.Device) *Input {
	b, n := int64(h.Size), int64(h.Width)
	pool, start := make([]int64, 0, len(h.Index)), make([]int64, 0, h.Size)
	weight, count := make([]float32, 0, len(h.Index)), make([]float32, 0, h.Size)
	feasible := 1 // at least one column, so no tensor is empty
	for j := range h.Size {
		start = append(start, int64(len(pool)))
		var c float32
		f := 0
		for i := j * h.Width; i < (j+1)*h.Width; i++ {
			if h.Valid[i] > 0 {
				pool, weight = append(pool, h.Index[i]), append(weight, h.Valid[i])
				c += h.Valid[i]
			}
			if h.Mask[i] {
				f++
			}
		}
		count, feasible = append(count, max(c, 1)), max(feasible, f)
	}
	index := make([]int64, len(h.Index))
	u := int64(len(h.Rows) / nodeDim)
	for i, r := range h.Index {
		index[i] = u
		if h.Valid[i] > 0 {
			index[i] = r
		}
	}
	rows := make([]int64, h.Size*feasible)
	at := make([]int64, h.Size*feasible)
	for j := range h.Size {
		k := j * feasible
		for i := range h.Width {
			if h.Mask[j*h.Width+i] {
				rows[k], at[k] = h.Index[j*h.Width+i], int64(i)
				k++
			}
		}
		for ; k < (j+1)*feasible; k++ {
			at[k] = n
		}
	}
	f := int64(feasible)
	return &Input{
		Rows:       HostTensor(h.Rows, []int64{int64(len(h.Rows) / nodeDim), int64(nodeDim)}, dev),
		Task:       HostTensor(h.Task, []int64{b, int64(len(h.Task)) / max(b, 1)}, dev),
		Global:     HostTensor(h.Global, []int64{b, int64(len(h.Global)) / max(b, 1)}, dev),
		Mask:       HostTensor(h.Mask, []int64{b, n}, dev),
		Index:      HostTensor(index, []int64{b, n}, dev),
		Pool:       HostTensor(pool, []int64{int64(len(pool))}, dev),
		PoolStart:  HostTensor(start, []int64{b}, dev),
		PoolWeight: HostTensor(weight, []int64{int64(len(weight))}, dev),
		Count:      HostTensor(count, []int64{b, 1}, dev),
		Feasible:   HostTensor(rows, []int64{b, f}, dev),
		FeasibleAt: HostTensor(at, []int64{b, f}, dev),
	}
}

// Tensors moves the first b.Size observations to dev, each distinct node row once. The node
// axis is cut to the largest NumNodes of those, so a batch of small clusters does not pay for
// MaxNodes.
func (b *HostBatch) Tensors(dev gotch.Device) *Input {
	bs, n := b.Size, 0
	for _, k := range b.NumNodes[:bs] {
		n = max(n, int(k))
	}
	ones := make([]float32, n)
	for i := range ones {
		ones[i] = 1
	}
	rows := new(RowIndex)
	rows.Reset(b.NodeDim)
	obs := make([]Observation, bs)
	for j := range bs {
		k := int(b.NumNodes[j])
		o := env.Observation{NumNodes: k, Nodes: b.Nodes[j*b.MaxNodes*b.NodeDim : (j*b.MaxNodes+k)*b.NodeDim]}
		obs[j] = Observation{Rows: rows, IDs: rows.Add(&o, nil), Mask: b.Mask[j*b.MaxNodes : j*b.MaxNodes+k], Count: ones[:k],
			Task: b.Task[j*b.TaskDim : (j+1)*b.TaskDim], Global: b.Global[j*b.GlobalDim : (j+1)*b.GlobalDim]}
	}
	return BatchInput(obs, dev)
}

// Drop frees the batch's tensors.
func (in *Input) Drop() {
	for _, t := range []*ts.Tensor{in.Rows, in.Task, in.Global, in.Mask, in.Index, in.Pool, in.PoolStart, in.PoolWeight, in.Count, in.Feasible, in.FeasibleAt} {
		t.MustDrop()
	}
}

// HostTensor copies a host slice into a tensor of the given shape on dev. libtorch copies
// the data straight from the slice (gotch's OfSlice first re-encodes it value by value, 5% of
// a PPO run's CPU).
func HostTensor[T float32 | bool | int64](data []T, shape []int64, dev gotch.Device) *ts.Tensor {
	if len(data) == 0 { // libtorch cannot take an empty host buffer; make the empty shape directly
		return ts.MustZeros(shape, kindOf[T](), dev)
	}
	c := hostData(data, shape)
	if err := ts.TorchErr(); err != nil {
		panic(fmt.Sprintf("host tensor of shape %v: %v", shape, err))
	}
	t := ts.New(c)
	if dev != gotch.CPU {
		t = t.MustTo(dev, true)
	}
	return t
}

// hostData is a new libtorch tensor of the given shape holding a copy of data (not empty).
func hostData[T float32 | bool | int64](data []T, shape []int64) lib.Ctensor {
	c := lib.AtTensorOfData(unsafe.Pointer(&data[0]), shape, uint(len(shape)), uint(unsafe.Sizeof(data[0])), int(kindOf[T]().CKind()))
	runtime.KeepAlive(data)
	return c
}

func kindOf[T float32 | bool | int64]() gotch.DType {
	var zero T
	switch any(zero).(type) {
	case bool:
		return gotch.Bool
	case int64:
		return gotch.Int64
	}
	return gotch.Float
}

// HostFloats copies a float tensor (any shape, any device) into dst, reusing its storage.
// It copies straight through libtorch: gotch's CopyData first type-checks dst value by value
// through reflection, which cost more than a rollout step's forward pass.
func HostFloats(t *ts.Tensor, dst []float32) []float32 {
	if k := t.DType(); k != gotch.Float {
		panic(fmt.Sprintf("HostFloats of a %v tensor", k))
	}
	n := int(t.Numel())
	if cap(dst) < n {
		dst = make([]float32, n)
	}
	dst = dst[:n]
	if n == 0 {
		return dst
	}
	lib.AtCopyData(c(t), unsafe.Pointer(&dst[0]), uint(n), 4)
	if err := ts.TorchErr(); err != nil {
		panic(fmt.Sprintf("copying a tensor of shape %v to the host: %v", t.MustSize(), err))
	}
	return dst
}
