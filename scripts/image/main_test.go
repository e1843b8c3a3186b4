package main

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/schedrl/schedrl/internal/repotest"
)

// fakeBuild links a program against libdep.so in a libtorch-like tree (lib/, build-version) with
// the given -rpath, and returns the program and the tree.
func fakeBuild(t *testing.T, ctx context.Context, rpath string) (bin, libtorch string) {
	t.Helper()
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Fatal("a C compiler is needed (the libtorch build needs one too):", err)
	}
	dir := t.TempDir()
	libtorch = filepath.Join(dir, "libtorch")
	lib := filepath.Join(libtorch, "lib")
	if err := os.MkdirAll(lib, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{
		"dep.c":                  "int dep(void) { return 0; }\n",
		"main.c":                 "int dep(void);\nint main(void) { return dep(); }\n",
		"libtorch/build-version": "2.1.2+cu121\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin = filepath.Join(dir, "schedrl")
	for _, args := range [][]string{
		{"-shared", "-fPIC", "-o", filepath.Join(lib, "libdep.so"), filepath.Join(dir, "dep.c")},
		{"-Wl,--enable-new-dtags,-rpath," + rpath, "-L" + lib, "-o", bin, filepath.Join(dir, "main.c"), "-ldep"},
	} {
		if out, err := exec.CommandContext(ctx, cc, args...).CombinedOutput(); err != nil {
			t.Fatalf("cc %v: %v\n%s", args, err, out)
		}
	}
	return bin, libtorch
}

// TestLayersFromOriginRunpath: a binary linked with the image's runpath gets its library from
// --libtorch's lib/ into the libtorch layer, with libtorch's build-version; one linked with the
// build machine's path (a plain `go build`) is refused by name.
func TestLayersFromOriginRunpath(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bin, libtorch := fakeBuild(t, ctx, runpath)
	o, err := newImageOptions([]string{"--repo", repotest.Root(), "--binary", bin, "--libtorch", libtorch, "--epoch", "0"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	specs, err := layerSpecs(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	var torch []string
	for _, s := range specs {
		if s.Name != "libtorch" {
			continue
		}
		for _, f := range s.Files {
			torch = append(torch, f.Path+" <- "+f.Source)
		}
	}
	want := []string{
		libDir + "/libdep.so <- " + filepath.Join(libtorch, "lib", "libdep.so"),
		home + "/build-version <- " + filepath.Join(libtorch, "build-version"),
	}
	if strings.Join(torch, "\n") != strings.Join(want, "\n") {
		t.Fatalf("libtorch layer:\n%s\nwant:\n%s", strings.Join(torch, "\n"), strings.Join(want, "\n"))
	}

	built, _ := fakeBuild(t, ctx, filepath.Join(libtorch, "lib"))
	o.Binary = built
	_, err = layerSpecs(ctx, o)
	if err == nil || !strings.Contains(err.Error(), "want \"$ORIGIN/../lib\": build it with -tags libtorch_origin") {
		t.Fatalf("binary with the build machine's runpath: got %v", err)
	}
}
