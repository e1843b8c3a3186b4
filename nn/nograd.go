package nn

import (
	"runtime"

	"github.com/sugarme/gotch/ts"
)

// libtorch's grad mode is per OS thread, and gotch toggles it (NoGrad) in weight
// initialisation and VarStore.Load. A goroutine may move between threads between cgo calls,
// so an unpinned toggle can switch the mode off on one thread and back on on another, leaving
// a later training step without gradients. Everything here runs pinned to one thread, with
// the process's intra-op thread count applied to it (applyThreads).

// NoGrad runs fn with gradient tracking off (inference, optimiser updates).
func NoGrad(fn func()) {
	pinned(func() { ts.NoGrad(fn) })
}

// WithGrad runs fn with gradient tracking on: a training step's forward and backward passes.
func WithGrad(fn func()) {
	pinned(func() {
		prev := ts.MustGradSetEnabled(true)
		defer ts.MustGradSetEnabled(prev)
		fn()
	})
}

func pinned(fn func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	applyThreads()
	fn()
}
