package nn

import (
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// Scope owns tensors and frees them together when it is dropped, so that a loss written term
// by term, one tensor per named quantity, has its lifetimes handled in one place. Every
// tensor holds libtorch memory until it is dropped, and nothing else frees it soon enough.
// Dropping a handle does not cut the autograd graph: backward still reaches every op that
// made a loss whose handles are gone, so a scope may be dropped only after backward.
type Scope struct {
	dev   gotch.Device
	owned []*ts.Tensor
}

// NewScope opens a scope whose host copies go to dev.
func NewScope(dev gotch.Device) *Scope { return &Scope{dev: dev} }

// Own makes t the scope's and returns it.
func (s *Scope) Own(t *ts.Tensor) *ts.Tensor {
	s.owned = append(s.owned, t)
	return t
}

// Forward is net's forward pass over in, both outputs the scope's.
func (s *Scope) Forward(net *Net, in *Input) Output {
	out := net.Forward(in)
	s.Own(out.Logits)
	s.Own(out.Value)
	return out
}

// Floats copies x to the scope's device as a vector of shape [len(x)].
func (s *Scope) Floats(x []float32) *ts.Tensor {
	return s.Own(HostTensor(x, []int64{int64(len(x))}, s.dev))
}

// Longs copies x to the scope's device with the given shape.
func (s *Scope) Longs(x []int64, shape ...int64) *ts.Tensor {
	return s.Own(HostTensor(x, shape, s.dev))
}

// Drop frees every tensor the scope owns.
func (s *Scope) Drop() {
	for _, t := range s.owned {
		t.MustDrop()
	}
	s.owned = nil
}
