package nn

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/libtch"
	"github.com/sugarme/gotch/ts"
)

// Runtime describes the libtorch this binary loaded, for `schedrl doctor`.
type Runtime struct {
	LibtorchVersion string // e.g. 2.1.2+cu121
	LibtorchPath    string // folder holding libtorch_cpu.so
	GotchVersion    string
	Variant         string // cpu or cuda: how gotch was linked
	CUDAAvailable   bool
	CUDADevices     int
	Threads         int // libtorch intra-op threads
}

// Probe finds the loaded libtorch and runs one tensor operation on CPU to prove it works.
func Probe() (Runtime, error) {
	r := Runtime{Variant: libtch.SchedrlVariant, GotchVersion: gotchVersion(), Threads: libtch.AtGetNumThreads()}
	lib, err := loadedLibrary("libtorch_cpu.so")
	if err != nil {
		return r, err
	}
	r.LibtorchPath = filepath.Dir(lib)
	if r.LibtorchVersion, err = libtorchVersion(filepath.Dir(r.LibtorchPath)); err != nil {
		return r, err
	}
	ones, err := ts.Ones([]int64{2, 3}, gotch.Float, gotch.CPU)
	if err != nil {
		return r, fmt.Errorf("libtorch tensor op failed: %w", err)
	}
	sum, err := ones.Sum(gotch.Float, true)
	if err != nil {
		return r, fmt.Errorf("libtorch tensor op failed: %w", err)
	}
	if got := sum.Float64Values(true)[0]; got != 6 {
		return r, fmt.Errorf("libtorch tensor op: sum of ones(2,3) = %v, want 6", got)
	}
	r.CUDAAvailable = gotch.CUDA.IsAvailable()
	if r.CUDAAvailable {
		r.CUDADevices = int(gotch.CUDA.DeviceCount())
	}
	return r, nil
}

// loadedLibrary returns the path the dynamic loader mapped for the library named base.
func loadedLibrary(base string) (string, error) {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 6 && filepath.Base(fields[5]) == base {
			return fields[5], nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("%s is not loaded in this process", base)
}

var versionDefine = regexp.MustCompile(`#define TORCH_VERSION_(MAJOR|MINOR|PATCH) (\d+)`)

// libtorchVersion reads the version of the libtorch tree at dir: build-version (official
// archives and our setup write it), else the headers.
func libtorchVersion(dir string) (string, error) {
	if b, err := os.ReadFile(filepath.Join(dir, "build-version")); err == nil {
		return strings.TrimSpace(string(b)), nil
	}
	b, err := os.ReadFile(filepath.Join(dir, "include/torch/csrc/api/include/torch/version.h"))
	if err != nil {
		return "", errors.New("libtorch version unknown: no build-version or torch/version.h under " + dir)
	}
	var parts []string
	for _, m := range versionDefine.FindAllStringSubmatch(string(b), 3) {
		parts = append(parts, m[2])
	}
	return strings.Join(parts, "."), nil
}

func gotchVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	for _, m := range info.Deps {
		if m.Path == "github.com/sugarme/gotch" {
			if m.Replace != nil {
				return m.Version + " (patched copy " + m.Replace.Path + ")"
			}
			return m.Version
		}
	}
	return "unknown"
}
