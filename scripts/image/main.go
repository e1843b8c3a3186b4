// Command image assembles schedrl's OCI image (`make image`) from schedrl built with -trimpath
// and -tags libtorch_origin, without a container engine: the binary, the shared libraries ldd
// resolves for it (libtorch's beside the binary, the system's at their own paths), data/ and
// configs/ as git tracks them, the CA certificates, and a non-root user. It writes an OCI layout tarball, optionally pushes, and
// prints the manifest digest as the last line. The same inputs give the same digest.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/schedrl/schedrl/internal/ociimage"
)

// Where things live in the image; deploy/k8s's manifests rely on them.
const (
	home    = "/opt/schedrl"
	libDir  = home + "/lib"
	binPath = home + "/bin/schedrl"
	uid     = 65532 // the manifests' runAsUser
	// The binary's runpath: libDir seen from binPath. -tags libtorch_origin links it
	// (scripts/setup.d/11-gotch.sh), so the binary is the same from any checkout.
	runpath = "$ORIGIN/../lib"
)

type imageOptions struct {
	Repo     string // repository root: data/ and configs/ as `git ls-files` lists them
	Binary   string // the built schedrl
	Libtorch string // the libtorch it was linked against: ldd looks in its lib/
	Out      string // the OCI layout tarball
	Name     string // image reference recorded in the tarball
	Push     string // reference to push to; empty: none
	Epoch    int64  // every timestamp (Unix seconds): the commit's time
	Version  string
	Revision string
	CACerts  string
	Timeout  time.Duration // ldd, git and the push together
	Stdout   io.Writer
}

func newImageOptions(args []string, stdout io.Writer) (*imageOptions, error) {
	o := &imageOptions{Stdout: stdout}
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	fs.StringVar(&o.Repo, "repo", ".", "repository root")
	fs.StringVar(&o.Binary, "binary", "", "the built schedrl binary (required)")
	fs.StringVar(&o.Libtorch, "libtorch", "", "the libtorch the binary links (default: --repo's .deps/libtorch)")
	fs.StringVar(&o.Out, "out", "dist/schedrl-image.oci.tar", "OCI layout tarball to write")
	fs.StringVar(&o.Name, "name", "docker.io/schedrl/schedrl:latest", "image name:tag recorded in the tarball")
	fs.StringVar(&o.Push, "push", "", "also push to this reference")
	fs.Int64Var(&o.Epoch, "epoch", -1, "timestamp of every entry, Unix seconds (required; `git log -1 --format=%ct`)")
	fs.StringVar(&o.Version, "version", "", "version label")
	fs.StringVar(&o.Revision, "revision", "", "git revision label")
	fs.StringVar(&o.CACerts, "ca-certs", "/etc/ssl/certs/ca-certificates.crt", "CA bundle to install")
	fs.DurationVar(&o.Timeout, "timeout", 10*time.Minute, "deadline of the whole build and push")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if o.Libtorch == "" {
		o.Libtorch = filepath.Join(o.Repo, ".deps", "libtorch")
	}
	// ldd reports libraries by the search path's spelling: absolute, so layers name host files.
	var err error
	if o.Libtorch, err = filepath.Abs(o.Libtorch); err != nil {
		return nil, err
	}
	switch {
	case fs.NArg() > 0:
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	case o.Binary == "":
		return nil, fmt.Errorf("--binary is required")
	case o.Epoch < 0:
		return nil, fmt.Errorf("--epoch is required (Unix seconds >= 0)")
	case o.Timeout <= 0:
		return nil, fmt.Errorf("--timeout %v: must be > 0", o.Timeout)
	}
	return o, nil
}

func main() {
	o, err := newImageOptions(os.Args[1:], os.Stdout)
	if err == nil {
		err = run(context.Background(), o)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o *imageOptions) error {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	epoch := time.Unix(o.Epoch, 0).UTC()
	if err := os.MkdirAll(filepath.Dir(o.Out), 0o755); err != nil {
		return err
	}
	stage, err := os.MkdirTemp(filepath.Dir(o.Out), ".image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(stage)

	specs, err := layerSpecs(ctx, o)
	if err != nil {
		return err
	}
	layers := make([]v1.Layer, len(specs))
	names := make([]string, len(specs))
	for i, s := range specs {
		if layers[i], err = ociimage.WriteLayer(stage, s, epoch); err != nil {
			return err
		}
		names[i] = s.Name
		size, _ := layers[i].Size()
		fmt.Fprintf(o.Stdout, "layer %-8s %4d files %8.1f MB compressed\n", s.Name, len(s.Files), float64(size)/1e6)
	}
	img, err := ociimage.Image(layers, names, imageConfig(o), epoch)
	if err != nil {
		return err
	}
	if err := ociimage.WriteArchive(o.Out, img, o.Name, epoch); err != nil {
		return err
	}
	fmt.Fprintf(o.Stdout, "wrote %s (%s)\n", o.Out, o.Name)
	if o.Push != "" {
		if _, err := ociimage.Push(ctx, img, o.Push); err != nil {
			return err
		}
		fmt.Fprintf(o.Stdout, "pushed %s\n", o.Push)
	}
	d, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Fprintln(o.Stdout, d)
	return nil
}

func imageConfig(o *imageOptions) v1.Config {
	return v1.Config{
		User:       strconv.Itoa(uid) + ":" + strconv.Itoa(uid),
		Entrypoint: []string{binPath},
		WorkingDir: home,
		Env: []string{
			"PATH=" + home + "/bin:/usr/bin:/bin",
			"HOME=/tmp",
			"SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt",
		},
		Labels: map[string]string{
			"org.opencontainers.image.title":    "schedrl",
			"org.opencontainers.image.version":  o.Version,
			"org.opencontainers.image.revision": o.Revision,
			"org.opencontainers.image.source":   "https://github.com/schedrl/schedrl",
		},
	}
}

// layerSpecs lists the four layers, least often changed first: system (user, certificates,
// libc and friends), libtorch, data and configs, the binary.
func layerSpecs(ctx context.Context, o *imageOptions) ([]ociimage.LayerSpec, error) {
	rp, err := ociimage.Runpath(o.Binary)
	if err != nil {
		return nil, err
	}
	if rp != runpath {
		return nil, fmt.Errorf("%s: runpath %q, want %q: build it with -tags libtorch_origin, as make image does", o.Binary, rp, runpath)
	}
	version, err := libtorchVersionFile(o.Libtorch)
	if err != nil {
		return nil, err
	}
	libs, err := ociimage.SharedLibraries(ctx, o.Binary, filepath.Join(o.Libtorch, "lib"))
	if err != nil {
		return nil, err
	}
	system := []ociimage.File{
		{Path: "/etc/passwd", Data: []byte(fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nschedrl:x:%d:%d:schedrl:/tmp:/sbin/nologin\n", uid, uid))},
		{Path: "/etc/group", Data: []byte(fmt.Sprintf("root:x:0:\nschedrl:x:%d:\n", uid))},
		{Path: "/etc/ssl/certs/ca-certificates.crt", Source: o.CACerts},
		{Path: "/tmp", Dir: true, Mode: 0o1777},
	}
	var torch []ociimage.File
	for _, l := range libs {
		if systemLibrary(l) {
			system = append(system, ociimage.File{Path: l, Source: l})
		} else {
			torch = append(torch, ociimage.File{Path: path.Join(libDir, path.Base(l)), Source: l})
		}
	}
	torch = append(torch, version)
	tracked, err := gitFiles(ctx, o.Repo, "data", "configs")
	if err != nil {
		return nil, err
	}
	return []ociimage.LayerSpec{
		{Name: "system", Files: system},
		{Name: "libtorch", Files: torch},
		{Name: "data", Files: ociimage.TreeFiles(o.Repo, home, tracked)},
		{Name: "schedrl", Files: []ociimage.File{{Path: binPath, Source: o.Binary, Mode: 0o755}}},
	}, nil
}

// libtorchVersionFile is what nn.Probe reads to report libtorch's version (`schedrl doctor`):
// build-version, or else torch/version.h, of the libtorch the binary links.
func libtorchVersionFile(root string) (ociimage.File, error) {
	for _, rel := range []string{"build-version", "include/torch/csrc/api/include/torch/version.h"} {
		if _, err := os.Stat(filepath.Join(root, rel)); err == nil {
			return ociimage.File{Path: path.Join(home, rel), Source: filepath.Join(root, rel)}, nil
		}
	}
	return ociimage.File{}, fmt.Errorf("--libtorch %s: no build-version or include/torch/csrc/api/include/torch/version.h", root)
}

func systemLibrary(p string) bool {
	for _, dir := range []string{"/lib/", "/lib64/", "/usr/lib/", "/usr/lib64/"} {
		if strings.HasPrefix(p, dir) {
			return true
		}
	}
	return false
}

// gitFiles lists the files git tracks under dirs of repo, so scratch files never reach the image.
func gitFiles(ctx context.Context, repo string, dirs ...string) ([]string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", repo, "ls-files", "-z", "--"}, dirs...)...)
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files in %s: %w", repo, err)
	}
	var files []string
	for _, f := range strings.Split(string(out), "\x00") {
		if f != "" {
			files = append(files, f)
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("git ls-files in %s: nothing tracked under %v", repo, dirs)
	}
	return files, nil
}
