package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const sample = `package ts

// #include "stdlib.h"
import "C"

import (
	"unsafe"

	lib "github.com/sugarme/gotch/libtch"
)

type Tensor struct{ ctensor lib.Ctensor }

// Add adds.
func (ts *Tensor) Add(other *Tensor, del bool) (retVal *Tensor, err error) {
	ptr := (*lib.Ctensor)(unsafe.Pointer(C.malloc(0)))
	lib.AtgAdd(ptr, ts.ctensor, other.ctensor) // reads both
	return &Tensor{*ptr}, nil
}

func Cat(tensors []*Tensor, dim int64) *Tensor { return nil }

func Scalar(v float64, _ *Tensor) float64 { return v }
`

func TestPatchFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.go")
	if err := os.WriteFile(path, []byte(sample), 0o644); err != nil {
		t.Fatal(err)
	}
	n, _, err := patchFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("patched %d functions, want 2 (Add, Cat; Scalar's tensor is unnamed)", n)
	}
	out, _ := os.ReadFile(path)
	got := string(out)
	for _, want := range []string{
		`import "runtime"`,
		"defer runtime.KeepAlive(ts)\n\tdefer runtime.KeepAlive(other)\n",
		"defer runtime.KeepAlive(tensors)",
		"C.malloc(16 * C.size_t(unsafe.Sizeof(uintptr(0))))",
		"defer C.free(unsafe.Pointer(ptr))",
		"// reads both",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("patched file lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "malloc(0)") {
		t.Errorf("malloc(0) left:\n%s", got)
	}
}

func TestFixTensorWrapper(t *testing.T) {
	src := "func newTensor() *Tensor {\n\tx := new(Tensor)\n\tx.d = new(bigStruct)\n\treturn x\n}\n\n" +
		"func (ts *Tensor) Float64Values() []float64 {\n\tfloat64Ts := ts.MustTotype(gotch.Double, false)\n\t// float64Ts.MustDrop()\n\treturn nil\n}\n"
	out, n := fixTensorWrapper([]byte(src))
	if n != 2 {
		t.Errorf("%d fixes, want 2", n)
	}
	got := string(out)
	if strings.Contains(got, "bigStruct") || !strings.Contains(got, "\tfloat64Ts.MustDrop()\n") {
		t.Errorf("fixed source:\n%s", got)
	}
	if _, n := fixTensorWrapper(out); n != 0 {
		t.Errorf("fixed source fixed again: %d", n)
	}
}
