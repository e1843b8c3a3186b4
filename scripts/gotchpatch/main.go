// Command gotchpatch fixes two memory bugs of gotch's tensor package (ts) in a generated copy.
//
// Use after free: gotch frees a tensor's libtorch memory from a finalizer. Its methods pass t.ctensor to C and
// then no longer use t, so the collector may finalize t (freeing the libtorch tensor) while
// the C call is still reading it: random SIGSEGVs in training loops. This tool rewrites every
// function of the package in the given folder so that each *Tensor, []*Tensor or *Scalar
// parameter (receiver included) stays reachable until the function returns (Scalars are freed
// by finalizers too: MaskedFill's value scalar was freed mid-call under parallel eval):
//
//	defer runtime.KeepAlive(ts)
//
// Heap overflow and leak: each op gets its output slots from C.malloc(0), into which libtorch
// writes one pointer per result tensor (beyond the allocation for ops with several results),
// and the buffer is never freed. The tool gives it room for outputSlots pointers and, where it
// holds *lib.Ctensor results that are copied out before returning, frees it on return.
//
// Float64Values leaks the double copy it reads from (its MustDrop is commented out): one tensor
// per loss or gradient norm read, every mini-batch. The tool drops it.
//
// Host shadow: newTensor allocates a 100 kB Go array per tensor so that Go's collector runs
// often enough for finalizers to free tensors nobody dropped. schedrl drops its tensors
// explicitly, so the shadow only cost time: PPO spent a quarter of its Go CPU zeroing,
// allocating and collecting it. The tool removes the allocation.
//
// It runs on the generated copy in .deps/gotch, never on the module cache.
package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gotchpatch DIR (the ts package of a gotch copy)")
		os.Exit(2)
	}
	files, err := filepath.Glob(filepath.Join(os.Args[1], "*.go"))
	if err == nil && len(files) == 0 {
		err = fmt.Errorf("no Go files in %s", os.Args[1])
	}
	total, wrapperFixes := 0, 0
	for _, f := range files {
		if err != nil {
			break
		}
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		var n, w int
		n, w, err = patchFile(f)
		total += n
		wrapperFixes += w
	}
	if err == nil && wrapperFixes != len(wrapperFixTexts) {
		err = fmt.Errorf("%d of %d tensor-wrapper fixes applied: is this gotch v0.9.1?", wrapperFixes, len(wrapperFixTexts))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gotchpatch:", err)
		os.Exit(1)
	}
	slog.Info("gotchpatch: kept tensor parameters alive", "dir", os.Args[1], "functions", total)
}

// patchFile rewrites one file in place and returns how many functions it changed and how many
// tensor-wrapper fixes it applied. It edits the source text (inserting after each body's
// opening brace) so that comments stay where they are.
func patchFile(path string) (funcs, wrapperFixes int, err error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, err
	}
	src = fixOutputBuffers(src)
	src, wrapperFixes = fixTensorWrapper(src)
	funcs, err = keepAlive(path, src)
	return funcs, wrapperFixes, err
}

// wrapperFixTexts are the Float64Values leak and the host shadow, each found once in ts.
var wrapperFixTexts = [][2]string{
	{"\t// float64Ts.MustDrop()\n", "\tfloat64Ts.MustDrop()\n"},
	{"\tx.d = new(bigStruct)\n", ""},
}

func fixTensorWrapper(src []byte) ([]byte, int) {
	n := 0
	for _, f := range wrapperFixTexts {
		if bytes.Contains(src, []byte(f[0])) {
			src = bytes.ReplaceAll(src, []byte(f[0]), []byte(f[1]))
			n++
		}
	}
	return src, n
}

// keepAlive writes src to path with every tensor parameter kept alive to the end of its
// function, and returns how many functions it changed.
func keepAlive(path string, src []byte) (int, error) {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
	if err != nil {
		return 0, err
	}
	type insertion struct {
		at   int
		text string
	}
	var ins []insertion
	for _, decl := range file.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		var names []string
		if fn.Recv != nil {
			names = tensorParams(fn.Recv)
		}
		names = append(names, tensorParams(fn.Type.Params)...)
		var text strings.Builder
		for _, name := range names {
			fmt.Fprintf(&text, "\ndefer runtime.KeepAlive(%s)", name)
		}
		if text.Len() > 0 {
			ins = append(ins, insertion{fset.Position(fn.Body.Lbrace).Offset + 1, text.String() + "\n"})
		}
	}
	funcs := len(ins)
	if funcs == 0 {
		return 0, os.WriteFile(path, src, 0o644)
	}
	if !importsRuntime(file) {
		ins = append([]insertion{{fset.Position(file.Name.End()).Offset, "\n\nimport \"runtime\"\n"}}, ins...)
	}
	var out bytes.Buffer
	last := 0
	for _, in := range ins {
		out.Write(src[last:in.at])
		out.WriteString(in.text)
		last = in.at
	}
	out.Write(src[last:])
	formatted, err := format.Source(out.Bytes())
	if err != nil {
		return 0, fmt.Errorf("%s: patched source does not parse: %w", path, err)
	}
	return funcs, os.WriteFile(path, formatted, 0o644)
}

// tensorParams lists the named parameters of type *Tensor, []*Tensor or *Scalar.
func tensorParams(fields *ast.FieldList) []string {
	var names []string
	for _, f := range fields.List {
		t := f.Type
		if arr, ok := t.(*ast.ArrayType); ok && arr.Len == nil {
			t = arr.Elt
		}
		star, ok := t.(*ast.StarExpr)
		if !ok {
			continue
		}
		if id, ok := star.X.(*ast.Ident); !ok || (id.Name != "Tensor" && id.Name != "Scalar") {
			continue
		}
		for _, name := range f.Names {
			if name.Name != "_" {
				names = append(names, name.Name)
			}
		}
	}
	return names
}

// outputSlots bounds the result tensors of one op (libtorch's widest return 6 or fewer).
const outputSlots = 16

var (
	ctensorBuffer = regexp.MustCompile(`(?m)^(\s*)(\w+) := \(\*lib\.Ctensor\)\(unsafe\.Pointer\(C\.malloc\(0\)\)\)$`)
	emptyMalloc   = regexp.MustCompile(`C\.malloc\(0\)`)
)

func fixOutputBuffers(src []byte) []byte {
	size := fmt.Sprintf("C.malloc(%d * C.size_t(unsafe.Sizeof(uintptr(0))))", outputSlots)
	if bytes.Contains(src, []byte(`"stdlib.h"`)) {
		src = ctensorBuffer.ReplaceAll(src, []byte("${1}${2} := (*lib.Ctensor)(unsafe.Pointer("+size+"))\n${1}defer C.free(unsafe.Pointer(${2}))"))
	}
	return emptyMalloc.ReplaceAll(src, []byte(size))
}

func importsRuntime(file *ast.File) bool {
	for _, imp := range file.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == "runtime" && imp.Name == nil {
			return true
		}
	}
	return false
}
