package nn

import (
	"runtime"

	"github.com/sugarme/gotch/ts"
)

// NoGrad runs fn with gradient tracking off (inference, optimiser updates). libtorch's grad
// mode is per OS thread and a goroutine may move between threads between cgo calls, so the
// goroutine is pinned to its thread for the duration; unpinned, the mode can be switched off
// on one thread and back on on another, leaving a later training step without gradients.
func NoGrad(fn func()) {
	pinned(func() { ts.NoGrad(fn) })
}

// pinned runs fn on one OS thread: for gotch calls that toggle grad mode themselves
// (VarStore.Load).
func pinned(fn func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	fn()
}
