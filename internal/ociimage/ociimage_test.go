package ociimage

import (
	"archive/tar"
	"context"
	"encoding/json"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

var epoch = time.Unix(1764900000, 0).UTC()

// testImage builds a two-layer image from files under a fresh folder; the files are written
// with different mtimes and modes each time, which must not show in the image.
func testImage(t *testing.T, dir string) v1.Image {
	t.Helper()
	src := filepath.Join(dir, "src")
	if err := os.MkdirAll(filepath.Join(src, "data"), 0o777); err != nil {
		t.Fatal(err)
	}
	for i, f := range []string{"data/b.csv", "data/a.csv", "tool"} {
		p := filepath.Join(src, f)
		if err := os.WriteFile(p, []byte("content of "+f), 0o664); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, time.Now(), time.Now().Add(time.Duration(i)*time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(src, "tool"), 0o775); err != nil {
		t.Fatal(err)
	}
	specs := []LayerSpec{
		{Name: "system", Files: []File{{Path: "/etc/passwd", Data: []byte("root:x:0:0::/:/sbin/nologin\n")}, {Path: "/tmp", Dir: true, Mode: 0o1777}}},
		{Name: "app", Files: append(TreeFiles(src, "/opt/app", []string{"data/b.csv", "data/a.csv"}),
			File{Path: "/opt/app/bin/tool", Source: filepath.Join(src, "tool")})},
	}
	var layers []v1.Layer
	for _, s := range specs {
		l, err := WriteLayer(dir, s, epoch)
		if err != nil {
			t.Fatal(err)
		}
		layers = append(layers, l)
	}
	img, err := Image(layers, []string{"system", "app"}, v1.Config{Entrypoint: []string{"/opt/app/bin/tool"}, User: "65532:65532"}, epoch)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func TestSameInputsSameDigest(t *testing.T) {
	a, err := testImage(t, t.TempDir()).Digest()
	if err != nil {
		t.Fatal(err)
	}
	b, err := testImage(t, t.TempDir()).Digest()
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Fatalf("two builds of the same files: %s and %s", a, b)
	}
}

type entry struct {
	name     string
	mode     int64
	uid, gid int
	mtime    time.Time
}

func TestLayerEntriesSortedWithParentsAndFixedMetadata(t *testing.T) {
	img := testImage(t, t.TempDir())
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	rc, err := layers[1].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var got []entry
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		got = append(got, entry{h.Name, h.Mode, h.Uid, h.Gid, h.ModTime.UTC()})
	}
	want := []entry{
		{"opt/", 0o755, 0, 0, epoch}, {"opt/app/", 0o755, 0, 0, epoch},
		{"opt/app/bin/", 0o755, 0, 0, epoch}, {"opt/app/bin/tool", 0o755, 0, 0, epoch},
		{"opt/app/data/", 0o755, 0, 0, epoch}, {"opt/app/data/a.csv", 0o644, 0, 0, epoch},
		{"opt/app/data/b.csv", 0o644, 0, 0, epoch},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("entries\n got %v\nwant %v", got, want)
	}
}

func TestLayerRefusesBadPaths(t *testing.T) {
	for _, tc := range []struct {
		files []File
		want  string
	}{
		{[]File{{Path: "etc/passwd", Data: []byte("x")}}, `path "etc/passwd": want a clean absolute path`},
		{[]File{{Path: "/a/../b", Data: []byte("x")}}, `path "/a/../b": want a clean absolute path`},
		{[]File{{Path: "/a", Data: []byte("x")}, {Path: "/a", Data: []byte("y")}}, `path "/a" listed twice`},
		{[]File{{Path: "/a", Data: []byte("x")}, {Path: "/a/b", Data: []byte("y")}}, `path "/a/b": parent "/a" is a file`},
		{[]File{{Path: "/a", Source: "/nonexistent/schedrl-file"}}, "/nonexistent/schedrl-file"},
	} {
		_, err := WriteLayer(t.TempDir(), LayerSpec{Name: "x", Files: tc.files}, epoch)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want an error containing %q", tc.files, err, tc.want)
		}
	}
}

// TestArchiveReadByLayoutAndTarballReaders: the archive is an OCI layout (go-containerregistry's
// layout reader, what skopeo's oci-archive: and containerd read) and a Docker tarball
// (go-containerregistry's tarball reader, what crane reads), both giving the image's digest,
// and the same archive bytes twice.
func TestArchiveReadByLayoutAndTarballReaders(t *testing.T) {
	dir := t.TempDir()
	img := testImage(t, dir)
	want, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(dir, "image.oci.tar")
	ref := "example.test/schedrl/app:v1"
	if err := WriteArchive(archive, img, ref, epoch); err != nil {
		t.Fatal(err)
	}

	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	fromTarball, err := tarball.ImageFromPath(archive, &tag)
	if err != nil {
		t.Fatal(err)
	}
	// The tarball reader rebuilds the manifest from manifest.json with Docker media types, so
	// its manifest digest differs; the config (and with it every layer's DiffID) must not.
	cfgWant, _ := img.ConfigName()
	if cfg, err := fromTarball.ConfigName(); err != nil || cfg != cfgWant {
		t.Fatalf("tarball reader: config %v (%v), want %v", cfg, err, cfgWant)
	}
	if err := validateLayers(fromTarball); err != nil {
		t.Fatalf("tarball reader: %v", err)
	}

	unpacked := filepath.Join(dir, "unpacked")
	untar(t, archive, unpacked)
	idx, err := layout.ImageIndexFromPath(unpacked)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 || im.Manifests[0].Digest != want ||
		im.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "v1" ||
		im.Manifests[0].Annotations["io.containerd.image.name"] != ref {
		t.Fatalf("index.json: %+v, want one manifest %s named %s", im.Manifests, want, ref)
	}
	fromLayout, err := idx.Image(want)
	if err != nil {
		t.Fatal(err)
	}
	if err := validateLayers(fromLayout); err != nil {
		t.Fatalf("layout reader: %v", err)
	}

	again := filepath.Join(dir, "again.oci.tar")
	if err := WriteArchive(again, testImage(t, t.TempDir()), ref, epoch); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(archive)
	b, _ := os.ReadFile(again)
	if string(a) != string(b) {
		t.Fatalf("two archives of the same image differ (%d and %d bytes)", len(a), len(b))
	}
	if _, err := os.Stat(archive + ".tmp"); !os.IsNotExist(err) {
		t.Fatalf("temporary file left behind: %v", err)
	}
}

// TestArchiveReadBySkopeo: skopeo (Debian's package) reads the archive as oci-archive; the test
// needs skopeo on PATH.
func TestArchiveReadBySkopeo(t *testing.T) {
	skopeo, err := exec.LookPath("skopeo")
	if err != nil {
		t.Fatalf("skopeo not found: run `make setup` (scripts/setup.d/41-skopeo.sh)")
	}
	dir := t.TempDir()
	img := testImage(t, dir)
	want, _ := img.Digest()
	archive := filepath.Join(dir, "image.oci.tar")
	if err := WriteArchive(archive, img, "example.test/schedrl/app:v1", epoch); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, skopeo, "inspect", "oci-archive:"+archive+":v1").Output()
	if err != nil {
		t.Fatalf("skopeo inspect: %v", err)
	}
	var got struct {
		Digest string
		Layers []string
		User   string `json:"User"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("skopeo inspect: %v\n%s", err, out)
	}
	if got.Digest != want.String() || len(got.Layers) != 2 {
		t.Fatalf("skopeo inspect: digest %s, %d layers; want %s, 2 layers", got.Digest, len(got.Layers), want)
	}
}

func TestPushToRegistry(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	img := testImage(t, t.TempDir())
	want, _ := img.Digest()
	ref := strings.TrimPrefix(srv.URL, "http://") + "/schedrl/app:v1"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if got, err := Push(ctx, img, ref); err != nil || got != want {
		t.Fatalf("push: %v %v, want %v", got, err, want)
	}
	r, _ := name.ParseReference(ref)
	pulled, err := remote.Image(r, remote.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := pulled.Digest(); got != want {
		t.Fatalf("pulled %s, pushed %s", got, want)
	}
	if _, err := Push(ctx, img, "not a reference"); err == nil || !strings.Contains(err.Error(), `push reference "not a reference"`) {
		t.Fatalf("bad reference: got %v", err)
	}
}

func validateLayers(img v1.Image) error {
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			return err
		}
		tr := tar.NewReader(rc)
		for {
			if _, err := tr.Next(); err == io.EOF {
				break
			} else if err != nil {
				rc.Close()
				return err
			}
		}
		rc.Close()
	}
	return nil
}

func untar(t *testing.T, archive, dst string) {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		} else if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dst, filepath.FromSlash(h.Name))
		if h.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestParseLdd(t *testing.T) {
	out := "\tlinux-vdso.so.1 (0x00007ffd)\n" +
		"\tlibtorch_cpu.so => /deps/libtorch/lib/libtorch_cpu.so (0x00007f)\n" +
		"\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f)\n" +
		"\t/lib64/ld-linux-x86-64.so.2 (0x00007f)\n"
	got, err := parseLdd("bin", []byte(out))
	want := []string{"/deps/libtorch/lib/libtorch_cpu.so", "/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2"}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("got %v %v, want %v", got, err, want)
	}
	_, err = parseLdd("bin", []byte("\tlibc10.so => not found\n\tlibx.so => not found\n"))
	if err == nil || err.Error() != "ldd bin: libraries not found: libc10.so, libx.so" {
		t.Fatalf("got %v", err)
	}
}

// TestRunpathAndLibPath: a program linked against a library by a runpath relative to itself
// (what the image's schedrl has) reads back that runpath, and ldd finds the library only
// through the given library path, as scripts/image runs it.
func TestRunpathAndLibPath(t *testing.T) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Fatal("a C compiler is needed (the libtorch build needs one too):", err)
	}
	dir := t.TempDir()
	libDir := filepath.Join(dir, "deps", "lib")
	if err := os.MkdirAll(libDir, 0o755); err != nil {
		t.Fatal(err)
	}
	lib, main, bin := filepath.Join(dir, "dep.c"), filepath.Join(dir, "main.c"), filepath.Join(dir, "main")
	if err := os.WriteFile(lib, []byte("int dep(void) { return 0; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(main, []byte("int dep(void);\nint main(void) { return dep(); }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, args := range [][]string{
		{"-shared", "-fPIC", "-o", filepath.Join(libDir, "libdep.so"), lib},
		{"-Wl,--enable-new-dtags,-rpath,$ORIGIN/../lib", "-L" + libDir, "-o", bin, main, "-ldep"},
	} {
		if out, err := exec.CommandContext(ctx, cc, args...).CombinedOutput(); err != nil {
			t.Fatalf("cc %v: %v\n%s", args, err, out)
		}
	}
	if got, err := Runpath(bin); err != nil || got != "$ORIGIN/../lib" {
		t.Fatalf("Runpath: %q %v", got, err)
	}
	if _, err := SharedLibraries(ctx, bin, ""); err == nil || !strings.Contains(err.Error(), "libraries not found: libdep.so") {
		t.Fatalf("ldd without the library path: got %v", err)
	}
	libs, err := SharedLibraries(ctx, bin, libDir)
	if err != nil || !slices.Contains(libs, filepath.Join(libDir, "libdep.so")) {
		t.Fatalf("ldd with the library path: %v %v", libs, err)
	}

	if out, err := exec.CommandContext(ctx, cc, "-o", bin, main, filepath.Join(libDir, "libdep.so")).CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s", err, out)
	}
	if got, err := Runpath(bin); err == nil || !strings.Contains(err.Error(), "no DT_RUNPATH") {
		t.Fatalf("Runpath of a binary without one: %q %v", got, err)
	}
}
