// Package ociimage assembles OCI images from files on disk without a container engine, so that
// the same inputs always give the same bytes: entries are sorted, every timestamp is one fixed
// time, every entry is owned by 0:0, and parent folders are written explicitly. The image
// model, gzip layers, OCI layout and registry client are go-containerregistry's.
package ociimage

import (
	"archive/tar"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// File is one entry of a layer: a regular file with the content of Source (a host path) or
// Data, or a folder (Dir).
type File struct {
	Path   string // absolute path inside the image
	Source string // host file to copy (symlinks followed); empty: Data
	Data   []byte
	Mode   int64 // Unix mode bits (0o1777 for a sticky folder); 0: 0755 for folders and executables, else 0644
	Dir    bool
}

// LayerSpec names a layer (for the image history) and lists its files.
type LayerSpec struct {
	Name  string
	Files []File
}

// WriteLayer writes spec as a gzip-compressed tar under dir and returns it as an OCI layer.
// Files are sorted by path; folders above each file are added (0755) unless listed; every
// header has mtime epoch and owner 0:0. The file is compressed once here, so reading the layer
// (digest, layout, push) never compresses again.
func WriteLayer(dir string, spec LayerSpec, epoch time.Time) (v1.Layer, error) {
	entries, err := withParents(spec.Files)
	if err != nil {
		return nil, fmt.Errorf("layer %s: %w", spec.Name, err)
	}
	f, err := os.CreateTemp(dir, "layer-*.tar.gz")
	if err != nil {
		return nil, err
	}
	name := f.Name()
	if err := writeTarGz(f, entries, epoch); err != nil {
		f.Close()
		os.Remove(name)
		return nil, fmt.Errorf("layer %s: %w", spec.Name, err)
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	return tarball.LayerFromFile(name, tarball.WithMediaType(types.OCILayer))
}

// withParents validates the paths, adds missing parent folders and sorts the entries.
func withParents(files []File) ([]File, error) {
	byPath := map[string]File{}
	for _, f := range files {
		if !path.IsAbs(f.Path) || path.Clean(f.Path) != f.Path || f.Path == "/" {
			return nil, fmt.Errorf("path %q: want a clean absolute path below /", f.Path)
		}
		if f.Dir && (f.Source != "" || f.Data != nil) {
			return nil, fmt.Errorf("path %q: a folder has no content", f.Path)
		}
		if _, dup := byPath[f.Path]; dup {
			return nil, fmt.Errorf("path %q listed twice", f.Path)
		}
		byPath[f.Path] = f
	}
	for _, f := range files {
		for p := path.Dir(f.Path); p != "/"; p = path.Dir(p) {
			if have, ok := byPath[p]; ok {
				if !have.Dir {
					return nil, fmt.Errorf("path %q: parent %q is a file", f.Path, p)
				}
				continue
			}
			byPath[p] = File{Path: p, Dir: true}
		}
	}
	out := make([]File, 0, len(byPath))
	for _, f := range byPath {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

func writeTarGz(w io.Writer, entries []File, epoch time.Time) error {
	zw, err := gzip.NewWriterLevel(w, gzip.BestSpeed)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		if err := writeEntry(tw, e, epoch); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return zw.Close()
}

func writeEntry(tw *tar.Writer, e File, epoch time.Time) error {
	hdr := &tar.Header{
		Name:    strings.TrimPrefix(e.Path, "/"),
		ModTime: epoch,
		Format:  tar.FormatPAX,
	}
	if e.Dir {
		hdr.Typeflag, hdr.Name, hdr.Mode = tar.TypeDir, hdr.Name+"/", modeOr(e.Mode, 0o755)
		return tw.WriteHeader(hdr)
	}
	hdr.Typeflag = tar.TypeReg
	if e.Source == "" {
		hdr.Mode, hdr.Size = modeOr(e.Mode, 0o644), int64(len(e.Data))
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		_, err := tw.Write(e.Data)
		return err
	}
	src, err := os.Open(e.Source)
	if err != nil {
		return err
	}
	defer src.Close()
	st, err := src.Stat()
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s (for %s): not a regular file", e.Source, e.Path)
	}
	def := int64(0o644)
	if st.Mode()&0o111 != 0 {
		def = 0o755
	}
	hdr.Mode, hdr.Size = modeOr(e.Mode, def), st.Size()
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if n, err := io.Copy(tw, src); err != nil {
		return fmt.Errorf("%s: %w", e.Source, err)
	} else if n != st.Size() {
		return fmt.Errorf("%s: changed while read (%d of %d bytes)", e.Source, n, st.Size())
	}
	return nil
}

func modeOr(m, def int64) int64 {
	if m == 0 {
		return def
	}
	return m & 0o7777
}

// TreeFiles lists the regular files named by rel (paths relative to root, as `git ls-files`
// prints them) as image files under dest.
func TreeFiles(root, dest string, rel []string) []File {
	out := make([]File, 0, len(rel))
	for _, r := range rel {
		out = append(out, File{Path: path.Join(dest, filepath.ToSlash(r)), Source: filepath.Join(root, r)})
	}
	return out
}
