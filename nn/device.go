// Package nn holds schedrl's gotch (libtorch) networks, their checkpoints and the choice of
// device. It is one of the few packages that link libtorch (see docs/design.md).
package nn

import (
	"fmt"
	"sync/atomic"

	"github.com/schedrl/schedrl/internal/config"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/libtch"
)

// threads is the intra-op thread count set by the last Device call with cfg.Threads > 0 (0:
// none yet, libtorch's default everywhere). libtorch keeps the count per OS thread (OpenMP's
// and MKL's thread-local settings), and a thread that ran libtorch before a set keeps its
// old count; Go moves a goroutine between OS threads, more often under load. So every pinned
// section applies this count on its own thread, or the same run would sum its floats in an
// order that depends on which thread the scheduler picked.
var threads atomic.Int64

// applyThreads gives the calling OS thread the process's intra-op thread count; callers hold
// the thread (pinned).
func applyThreads() {
	if n := int(threads.Load()); n > 0 && libtch.AtGetNumThreads() != n {
		libtch.AtSetNumThreads(n)
	}
}

// Device resolves the configured device and applies its CPU thread budget to every later
// libtorch section of this package, whichever OS thread runs it. "auto" picks the first GPU
// when libtorch sees one; asking for a GPU that is not there is an error, not a silent fall
// back to CPU.
func Device(cfg config.DeviceConfig) (gotch.Device, error) {
	kind, ordinal, err := config.ParseDevice(cfg.Name)
	if err != nil {
		return gotch.Device{}, fmt.Errorf("device.name: %w", err)
	}
	if cfg.Threads > 0 {
		threads.Store(int64(cfg.Threads))
		libtch.AtSetNumThreads(cfg.Threads)
	}
	switch kind {
	case config.DeviceCPU:
		return gotch.CPU, nil
	case config.DeviceAuto:
		return gotch.CudaIfAvailable(), nil
	}
	if n := int(gotch.CUDA.DeviceCount()); !gotch.CUDA.IsAvailable() || ordinal >= n {
		return gotch.Device{}, fmt.Errorf("device.name: %q requested but libtorch sees %d CUDA device(s) (%s variant)", cfg.Name, max(n, 0), libtch.SchedrlVariant)
	}
	return gotch.CudaBuilder(uint(ordinal)), nil
}

// Seed seeds libtorch's generators (weight initialisation, dropout, sampling on the device), so
// that the same config seed gives the same network on CPU.
func Seed(seed int64) { libtch.AtManualSeed(seed) }
