package nn

import (
	"bytes"
	"hash/maphash"
	"unsafe"

	"github.com/sugarme/gotch"

	"github.com/schedrl/schedrl/env"
)

// NodeRows merges identical node rows of an observation. A cluster holds hundreds of nodes in
// the same state (idle nodes of one model, above all), and the network scores identical rows
// identically, so sending each distinct row once with its multiplicity in Input.Valid gives the
// same output over nodes at a fraction of the cost: the mean pool weighs a row by its count,
// the max pool only asks whether it is real. On the 1213-node openb cluster an FGD-like episode
// has ~137 distinct rows per decision. A NodeRows reuses its buffers: after warm-up a Merge
// allocates nothing.
type NodeRows struct {
	Of    []int32   // row of each node of the last merged observation
	Count []float32 // nodes per row

	seed  maphash.Seed
	table []int32 // open addressing over rows: row+1, 0 empty
}

// Merge writes obs into dst with one row per distinct (features, feasibility) pair, rows in
// order of first appearance, and fills Of and Count. Rows are compared bit for bit.
func (r *NodeRows) Merge(obs *env.Observation, nodeDim int, dst *env.Observation) {
	n := obs.NumNodes
	if size := tableSize(n); len(r.table) < size {
		if len(r.table) == 0 {
			r.seed = maphash.MakeSeed()
		}
		r.table = make([]int32, size)
	}
	table := r.table[:tableSize(n)]
	clear(table)
	dst.Stage = obs.Stage
	dst.Nodes, dst.Mask = dst.Nodes[:0], dst.Mask[:0]
	r.Of, r.Count = r.Of[:0], r.Count[:0]
	for i := range n {
		row := rowBytes(obs.Nodes[i*nodeDim : (i+1)*nodeDim])
		h := maphash.Bytes(r.seed, row)
		if obs.Mask[i] {
			h = ^h
		}
		slot := int(h & uint64(len(table)-1))
		for {
			k := int(table[slot]) - 1
			if k < 0 {
				k = len(r.Count)
				table[slot] = int32(k + 1)
				dst.Nodes = append(dst.Nodes, obs.Nodes[i*nodeDim:(i+1)*nodeDim]...)
				dst.Mask = append(dst.Mask, obs.Mask[i])
				r.Count = append(r.Count, 0)
			} else if dst.Mask[k] != obs.Mask[i] || !bytes.Equal(rowBytes(dst.Nodes[k*nodeDim:(k+1)*nodeDim]), row) {
				slot = (slot + 1) & (len(table) - 1)
				continue
			}
			r.Count[k]++
			r.Of = append(r.Of, int32(k))
			break
		}
	}
	dst.NumNodes = len(r.Count)
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
	rows := int64(merged.NumNodes)
	return &Input{
		Nodes:  HostTensor(merged.Nodes, []int64{1, rows, int64(nodeDim)}, dev),
		Task:   HostTensor(merged.Task, []int64{1, int64(len(merged.Task))}, dev),
		Global: HostTensor(merged.Global, []int64{1, int64(len(merged.Global))}, dev),
		Mask:   HostTensor(merged.Mask, []int64{1, rows}, dev),
		Valid:  HostTensor(r.Count, []int64{1, rows}, dev),
	}
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
