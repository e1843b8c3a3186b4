package nn

import (
	"bytes"
	"hash/maphash"
	"slices"
	"unsafe"

	"github.com/sugarme/gotch"

	"github.com/schedrl/schedrl/env"
)

// rowTable numbers distinct float rows, compared bit for bit together with a one-bit tag, in
// order of first appearance. It reuses its buffers: after warm-up adding a row allocates
// nothing.
type rowTable struct {
	dim   int
	seed  maphash.Seed
	slots []int32   // open addressing over rows: id+1, 0 empty
	rows  []float32 // the distinct rows, id-major
	tags  []bool
}

// reset empties the table for rows of dim values, sized for about n distinct rows.
func (t *rowTable) reset(dim, n int) {
	if t.slots == nil {
		t.seed = maphash.MakeSeed()
	}
	t.dim = dim
	t.rows, t.tags = t.rows[:0], t.tags[:0]
	size := tableSize(n)
	if len(t.slots) < size {
		t.slots = make([]int32, size)
	}
	t.slots = t.slots[:size]
	clear(t.slots)
}

func (t *rowTable) len() int { return len(t.tags) }

// add returns row's id, numbering it if it is new.
func (t *rowTable) add(row []float32, tag bool) int32 {
	if 2*(t.len()+1) > len(t.slots) {
		t.grow()
	}
	key := rowBytes(row)
	h := maphash.Bytes(t.seed, key)
	if tag {
		h = ^h
	}
	mask := len(t.slots) - 1
	for slot := int(h) & mask; ; slot = (slot + 1) & mask {
		id := t.slots[slot] - 1
		if id < 0 {
			id = int32(t.len())
			t.slots[slot] = id + 1
			t.rows = append(t.rows, row...)
			t.tags = append(t.tags, tag)
			return id
		}
		if t.tags[id] == tag && bytes.Equal(rowBytes(t.rows[int(id)*t.dim:(int(id)+1)*t.dim]), key) {
			return id
		}
	}
}

// grow doubles the slots and re-inserts every row.
func (t *rowTable) grow() {
	t.slots = make([]int32, 2*max(len(t.slots), 8))
	mask := len(t.slots) - 1
	for id := range t.len() {
		h := maphash.Bytes(t.seed, rowBytes(t.rows[id*t.dim:(id+1)*t.dim]))
		if t.tags[id] {
			h = ^h
		}
		slot := int(h) & mask
		for t.slots[slot] != 0 {
			slot = (slot + 1) & mask
		}
		t.slots[slot] = int32(id + 1)
	}
}

// NodeRows merges identical node rows of an observation. A cluster holds hundreds of nodes in
// the same state (idle nodes of one model, above all), and the network scores identical rows
// identically, so sending each distinct row once with its multiplicity (Input.PoolWeight) gives the
// same output over nodes at a fraction of the cost: the mean pool weighs a row by its count,
// the max pool only asks whether it is real. On the 1213-node openb cluster an FGD-like episode
// has ~137 distinct rows per decision. A NodeRows reuses its buffers: after warm-up a Merge
// allocates nothing.
type NodeRows struct {
	Of    []int32   // row of each node of the last merged observation
	Count []float32 // nodes per row

	table rowTable
}

// Merge writes obs into dst with one row per distinct (features, feasibility) pair, rows in
// order of first appearance, and fills Of and Count.
func (r *NodeRows) Merge(obs *env.Observation, nodeDim int, dst *env.Observation) {
	n := obs.NumNodes
	r.table.reset(nodeDim, n)
	r.Of, r.Count = r.Of[:0], r.Count[:0]
	for i := range n {
		k := r.table.add(obs.Nodes[i*nodeDim:(i+1)*nodeDim], obs.Mask[i])
		if int(k) == len(r.Count) {
			r.Count = append(r.Count, 0)
		}
		r.Count[k]++
		r.Of = append(r.Of, k)
	}
	dst.Stage = obs.Stage
	dst.NumNodes = r.table.len()
	dst.Nodes = append(dst.Nodes[:0], r.table.rows...)
	dst.Mask = append(dst.Mask[:0], r.table.tags...)
	dst.Task = append(dst.Task[:0], obs.Task...)
	dst.Global = append(dst.Global[:0], obs.Global...)
}

// Expand maps per-row values (a forward pass over merged rows) back to the nodes of the last
// merged observation, reusing dst's storage.
func (r *NodeRows) Expand(rowValues, dst []float32) []float32 {
	if cap(dst) < len(r.Of) {
		dst = make([]float32, len(r.Of))
	}
	dst = dst[:len(r.Of)]
	for i, k := range r.Of {
		dst[i] = rowValues[k]
	}
	return dst
}

// Input puts merged (the observation Merge wrote) on dev as a batch of one, its rows weighted
// by Count.
func (r *NodeRows) Input(merged *env.Observation, nodeDim int, dev gotch.Device) *Input {
	index := make([]int64, merged.NumNodes)
	for i := range index {
		index[i] = int64(i)
	}
	return newInput(HostInput{Rows: merged.Nodes, Index: index, Size: 1, Width: merged.NumNodes,
		Task: merged.Task, Global: merged.Global, Mask: merged.Mask, Valid: r.Count}, nodeDim, dev)
}

// RowIndex numbers the distinct node rows of many observations. Consecutive decisions of an
// episode differ in a node or two, so a PPO rollout's observations of one environment hold a
// few percent distinct rows: a batch built by BatchInput encodes each once.
type RowIndex struct {
	table rowTable
	stamp []int32 // per id: the batch that last used it, for BatchInput's renumbering
	local []int32 // per id: its row in that batch
	batch int32
}

// Reset empties the index for rows of nodeDim features.
func (x *RowIndex) Reset(nodeDim int) { x.table.reset(nodeDim, 1024) }

// Add numbers each node row of obs, appending the ids to ids.
func (x *RowIndex) Add(obs *env.Observation, ids []int32) []int32 {
	d := x.table.dim
	for i := range obs.NumNodes {
		ids = append(ids, x.table.add(obs.Nodes[i*d:(i+1)*d], false))
	}
	return ids
}

// Len is the number of distinct rows.
func (x *RowIndex) Len() int { return x.table.len() }

// Observation is one observation of a batch in RowIndex terms.
type Observation struct {
	Rows         *RowIndex // numbers IDs
	IDs          []int32   // row id of each candidate
	Mask         []bool    // feasible candidates
	Count        []float32 // nodes each candidate stands for (Valid)
	Task, Global []float32
}

// BatchInput builds a batch of observations on dev: the distinct rows they use, in order of
// first use, and each candidate's row. Observations of different RowIndexes may share a batch
// (their equal rows are then sent once per index).
func BatchInput(obs []Observation, dev gotch.Device) *Input {
	width, d, candidates := 0, 0, 0
	var indexes []*RowIndex // those of this batch, each started on a new batch number
	for _, o := range obs {
		width, d, candidates = max(width, len(o.IDs)), o.Rows.table.dim, candidates+len(o.IDs)
		if slices.Contains(indexes, o.Rows) {
			continue
		}
		indexes = append(indexes, o.Rows)
		x := o.Rows
		if n := x.table.len(); len(x.stamp) < n {
			x.stamp = append(x.stamp, make([]int32, n-len(x.stamp))...)
			x.local = append(x.local, make([]int32, n-len(x.local))...)
		}
		x.batch++
	}
	h := HostInput{Size: len(obs), Width: width, Index: make([]int64, len(obs)*width),
		Mask: make([]bool, len(obs)*width), Valid: make([]float32, len(obs)*width),
		Rows: make([]float32, 0, candidates*d)}
	if len(obs) > 0 {
		h.Task = make([]float32, 0, len(obs)*len(obs[0].Task))
		h.Global = make([]float32, 0, len(obs)*len(obs[0].Global))
	}
	for j, o := range obs {
		x := o.Rows
		for i, id := range o.IDs {
			if x.stamp[id] != x.batch {
				x.stamp[id], x.local[id] = x.batch, int32(len(h.Rows)/d)
				h.Rows = append(h.Rows, x.table.rows[int(id)*d:(int(id)+1)*d]...)
			}
			h.Index[j*width+i] = int64(x.local[id])
		}
		copy(h.Mask[j*width:], o.Mask)
		copy(h.Valid[j*width:], o.Count)
		h.Task = append(h.Task, o.Task...)
		h.Global = append(h.Global, o.Global...)
	}
	return newInput(h, d, dev)
}

// tableSize is a power of two at least twice n, so probe chains stay short.
func tableSize(n int) int {
	size := 16
	for size < 2*n {
		size *= 2
	}
	return size
}

func rowBytes(row []float32) []byte {
	if len(row) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&row[0])), len(row)*4)
}
