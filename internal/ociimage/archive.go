package ociimage

import (
	"archive/tar"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Annotations that name the image in index.json: the OCI tag (what skopeo's oci-archive:PATH:TAG
// matches) and containerd's full name (what `ctr images import` registers).
const (
	annotationRefName        = "org.opencontainers.image.ref.name"
	annotationContainerdName = "io.containerd.image.name"
)

// WriteArchive writes img as one tar at dst holding an OCI image layout (oci-layout, index.json,
// blobs/sha256/...) named ref, plus Docker's manifest.json pointing at the same blobs, the
// combined form `docker save` writes since Docker 25: skopeo (oci-archive:), containerd
// (`ctr images import`) and go-containerregistry/crane (tarball) all read it. The tar is
// deterministic (sorted entries, mtime epoch, 0:0) and written under a temporary name first.
func WriteArchive(dst string, img v1.Image, ref string, epoch time.Time) error {
	tag, err := name.NewTag(ref)
	if err != nil {
		return fmt.Errorf("image name %q: %w", ref, err)
	}
	stage, err := os.MkdirTemp(filepath.Dir(dst), ".oci-layout-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(stage)
	lp, err := layout.Write(stage, empty.Index)
	if err != nil {
		return err
	}
	if err := lp.AppendImage(img, layout.WithAnnotations(map[string]string{
		annotationRefName:        tag.TagStr(),
		annotationContainerdName: ref,
	})); err != nil {
		return err
	}
	dockerManifest, err := dockerManifest(img, ref)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(stage, "manifest.json"), dockerManifest, 0o644); err != nil {
		return err
	}
	tmp := dst + ".tmp"
	if err := tarFolder(tmp, stage, epoch); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, dst)
}

// dockerManifest names the image as given (docker.io/..., as containerd and kubelet normalize
// it; go-containerregistry's Name() would write index.docker.io/...).
func dockerManifest(img v1.Image, ref string) ([]byte, error) {
	m, err := img.Manifest()
	if err != nil {
		return nil, err
	}
	d := tarball.Descriptor{Config: blobPath(m.Config.Digest), RepoTags: []string{ref}}
	for _, l := range m.Layers {
		d.Layers = append(d.Layers, blobPath(l.Digest))
	}
	return json.Marshal(tarball.Manifest{d})
}

func blobPath(h v1.Hash) string { return "blobs/" + h.Algorithm + "/" + h.Hex }

// tarFolder writes the tree under root to dst as a plain tar, entries sorted.
func tarFolder(dst, root string, epoch time.Time) error {
	var paths []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		rel, err := filepath.Rel(root, p)
		paths = append(paths, filepath.ToSlash(rel))
		return err
	})
	if err != nil {
		return err
	}
	sort.Strings(paths)
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	for _, rel := range paths {
		if err := addToTar(tw, root, rel, epoch); err != nil {
			f.Close()
			return err
		}
	}
	if err := tw.Close(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func addToTar(tw *tar.Writer, root, rel string, epoch time.Time) error {
	p := filepath.Join(root, filepath.FromSlash(rel))
	st, err := os.Stat(p)
	if err != nil {
		return err
	}
	hdr := &tar.Header{Name: rel, ModTime: epoch, Mode: 0o644, Format: tar.FormatPAX}
	if st.IsDir() {
		hdr.Typeflag, hdr.Name, hdr.Mode = tar.TypeDir, rel+"/", 0o755
		return tw.WriteHeader(hdr)
	}
	hdr.Typeflag, hdr.Size = tar.TypeReg, st.Size()
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	src, err := os.Open(p)
	if err != nil {
		return err
	}
	defer src.Close()
	_, err = io.Copy(tw, src)
	return err
}
