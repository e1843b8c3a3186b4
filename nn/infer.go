package nn

import (
	"fmt"
	"unsafe"

	lib "github.com/sugarme/gotch/libtch"
	"github.com/sugarme/gotch/ts"

	"github.com/schedrl/schedrl/env"
)

// scorer is the placer's CPU inference path: the node scores of Net.Forward for one
// observation of merged rows, computed with libtorch handles that it frees itself. Each gotch
// tensor allocates a 100 kB Go shadow object (so its collector feels libtorch memory) and a
// finalizer; at ~45 tensors a decision that garbage, not the arithmetic, was most of a
// decision's cost. The scorer also does less work than Forward: no padding, no value head, no
// masking (the placer's argmax reads the mask), the mean pool as one product with count/N, and
// the node x task interaction folded into the score weights:
//
//	(h ⊙ te) Wi = h (teᵀ ⊙ Wi), so s = relu(h (Wn + teᵀ ⊙ Wi) + context Wc + bc).
//
// What libtorch reads or writes through a pointer (slot, dims, dim0, cat) lives in its own
// small allocation: cgo checks the whole object a pointer points into for Go pointers.
type scorer struct {
	net    *Net
	slot   *lib.Ctensor  // output slot of the libtorch calls
	live   []lib.Ctensor // tensors of the current call, freed by release
	failed bool          // an op returned no tensor: libtorch's error says why
	dims   []int64
	dim0   []int64
	cat    []lib.Ctensor
	task   []float32 // task and global features, concatenated
	share  []float32 // count / nodes per row: the mean pool's weights
}

// scores writes the score of each row of merged (count[r] nodes per row) into dst.
func (s *scorer) scores(merged *env.Observation, count []float32, dst []float32) ([]float32, error) {
	if s.slot == nil {
		s.slot, s.dims, s.dim0, s.cat = new(lib.Ctensor), make([]int64, 2), make([]int64, 1), make([]lib.Ctensor, 3)
	}
	defer s.release()
	s.failed = false
	n, arch := s.net, s.net.Arch
	rows := int64(merged.NumNodes)
	s.task = append(append(s.task[:0], merged.Task...), merged.Global...)
	var total float32
	for _, c := range count {
		total += c
	}
	s.share = s.share[:0]
	for _, c := range count {
		s.share = append(s.share, c/total)
	}

	h := s.data(merged.Nodes, rows, int64(arch.NodeDim))
	for _, enc := range n.encoder {
		h = s.relu(s.call(func() { lib.AtgAddmm(s.slot, c(enc.b), h, c(enc.w)) }))
	}
	taskIn := s.data(s.task, 1, int64(len(s.task)))
	te := s.relu(s.call(func() { lib.AtgAddmm(s.slot, c(n.task.b), taskIn, c(n.task.w)) })) // [1, H]
	share := s.data(s.share, 1, rows)
	s.cat[0] = te
	s.cat[1] = s.call(func() { lib.AtgMm(s.slot, share, h) }) // mean pool, [1, H]
	s.cat[2] = s.call(func() { lib.AtgAmax(s.slot, h, s.dim0, 1, 1) })
	context := s.call(func() { lib.AtgCat(s.slot, s.cat, 3, 1) }) // [1, 3H]
	perSample := s.call(func() { lib.AtgAddmm(s.slot, c(n.scoreContext.b), context, c(n.scoreContext.w)) })
	teCol := s.call(func() { lib.AtgT(s.slot, te) }) // [H, 1]
	w := s.call(func() { lib.AtgAddcmul(s.slot, c(n.scoreNode.w), c(n.scoreInteraction.w), teCol) })
	hid := s.relu(s.call(func() { lib.AtgAddmm(s.slot, perSample, h, w) })) // [rows, HH]
	out := s.call(func() { lib.AtgAddmm(s.slot, c(n.scoreOut.b), hid, c(n.scoreOut.w)) })
	if err := ts.TorchErr(); err != nil || s.failed {
		return dst, fmt.Errorf("placer forward: %v", err)
	}
	if cap(dst) < int(rows) {
		dst = make([]float32, rows, max(rows, 2*int64(cap(dst))))
	}
	dst = dst[:rows]
	if rows > 0 {
		lib.AtCopyData(out, unsafe.Pointer(&dst[0]), uint(rows), 4)
	}
	return dst, ts.TorchErr()
}

// c is the libtorch handle of a network weight (kept reachable by the Net).
func c(t *ts.Tensor) lib.Ctensor { return lib.Ctensor(t.Ctensor()) }

// call runs one libtorch op writing s.slot and keeps its result for release. After a failed
// op the rest are skipped: their inputs would be missing.
func (s *scorer) call(op func()) lib.Ctensor {
	if s.failed {
		return nil
	}
	*s.slot = nil
	op()
	if *s.slot == nil {
		s.failed = true
		return nil
	}
	s.live = append(s.live, *s.slot)
	return *s.slot
}

func (s *scorer) relu(t lib.Ctensor) lib.Ctensor {
	if s.failed {
		return nil
	}
	*s.slot = nil
	lib.AtgRelu_(s.slot, t)
	if *s.slot == nil {
		s.failed = true
		return nil
	}
	lib.AtFree(*s.slot) // relu_ returns a second handle to t
	return t
}

// data copies a [rows, cols] float matrix into a new tensor (libtorch copies the host data).
func (s *scorer) data(v []float32, rows, cols int64) lib.Ctensor {
	s.dims[0], s.dims[1] = rows, cols
	if len(v) == 0 {
		v = []float32{0} // cannot happen for a real observation; keep the pointer valid
	}
	t := hostData(v, s.dims)
	s.live = append(s.live, t)
	return t
}

func (s *scorer) release() {
	for _, t := range s.live {
		lib.AtFree(t)
	}
	s.live = s.live[:0]
}
