// Package checkpoint defines the on-disk checkpoint format shared by nn, pretrain, finetune,
// eval and registry: a directory holding the gotch VarStore file (model.ot), optional extra
// files (e.g. report/ plots), and manifest.json, which describes the network and its lineage
// and records the sha256 and size of every other file. The manifest is written last, so a
// directory with a valid manifest is a complete checkpoint. Pure Go: no libtorch needed.
package checkpoint

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/schedrl/schedrl/internal/atomicfile"
	"github.com/schedrl/schedrl/internal/digest"
	"github.com/schedrl/schedrl/internal/manifestkind"
)

// FormatVersion is the manifest format this package writes and reads.
const FormatVersion = 1

const (
	ManifestFile = "manifest.json" // the manifest's name inside a checkpoint directory
	ModelFile    = "model.ot"      // the gotch VarStore file every checkpoint holds
)

// Manifest describes one checkpoint.
type Manifest struct {
	Format         int                `json:"format"`
	Model          string             `json:"model"`                  // network kind/architecture, e.g. "attention-policy"
	Hyper          map[string]any     `json:"hyper,omitempty"`        // architecture and training hyper-parameters
	Env            string             `json:"env"`                    // environment (family) name
	FeatureVersion int                `json:"feature_version"`        // observation encoding version of Env
	DatasetHash    string             `json:"dataset_hash,omitempty"` // manifest hash of the training dataset
	ConfigHash     string             `json:"config_hash,omitempty"`
	CodeRevision   string             `json:"code_revision,omitempty"`
	Parent         string             `json:"parent,omitempty"` // Digest of the checkpoint this one started from
	Metrics        map[string]float64 `json:"metrics,omitempty"`
	History        map[string][]Step  `json:"history,omitempty"` // per-step training curves, e.g. loss by epoch
	Created        time.Time          `json:"created"`
	Files          []File             `json:"files"`
}

// Step is one point of a training curve.
type Step struct {
	Step  int64   `json:"step"`
	Value float64 `json:"value"`
}

// File is one file of the checkpoint, by slash-separated path relative to the directory.
type File struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	// Content is the file's content digest (ContentDigest) where it differs from SHA256: a
	// JSON file without its wall-clock fields, a nested checkpoint's manifest by its Digest.
	Content string `json:"content,omitempty"`
}

// Digest identifies a checkpoint by content: the content digest (internal/digest.JSON) of
// its manifest with every file by its content digest, rendered reports left out. Wall-clock
// values (created, epoch seconds, throughputs, latencies) do not enter it, so two trainings
// of the same weights at different times, and two publications of the same checkpoint, have
// the same Digest.
func (m Manifest) Digest() string {
	files := make([]File, 0, len(m.Files))
	for _, f := range m.Files {
		if digest.Rendered(f.Path) {
			continue
		}
		sum := f.SHA256
		if f.Content != "" {
			sum = f.Content
		}
		// The size goes too: a wall time written with more digits makes a JSON file longer.
		files = append(files, File{Path: f.Path, SHA256: sum})
	}
	m.Files = files
	b, err := json.Marshal(m)
	if err != nil {
		// Only a NaN/Inf metric or an unencodable hyper-parameter gets here; Validate refuses both.
		panic(fmt.Sprintf("checkpoint: encode manifest: %v", err))
	}
	return digest.JSON(b)
}

// ContentDigest is the content digest of the file at path, rel being its slash-separated
// path inside a checkpoint or stage output: a checkpoint manifest's Digest, else
// digest.Content. Pipeline stage keys hash outputs with it.
func ContentDigest(path, rel string) (string, error) {
	if filepath.Base(rel) == ManifestFile {
		data, err := os.ReadFile(path)
		if err != nil {
			return "", err
		}
		if manifestkind.Of(data) == manifestkind.Checkpoint {
			m, err := Parse(data)
			if err != nil {
				return "", fmt.Errorf("%s: %w", path, err)
			}
			return m.Digest(), nil
		}
	}
	return digest.Content(path, rel)
}

// Write hashes every file under dir (except the manifest and temporary files), fills
// m.Format, m.Files and, when zero, m.Created, and writes dir/manifest.json atomically, last.
// It returns the manifest as written.
func Write(dir string, m Manifest) (Manifest, error) {
	m.Format = FormatVersion
	if m.Created.IsZero() {
		m.Created = time.Now().UTC().Truncate(time.Millisecond)
	}
	files, err := hashDir(dir)
	if err != nil {
		return Manifest{}, err
	}
	m.Files = files
	if err := m.Validate(); err != nil {
		return Manifest{}, fmt.Errorf("%s: %w", filepath.Join(dir, ManifestFile), err)
	}
	data, err := m.Encode()
	if err != nil {
		return Manifest{}, err
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, ManifestFile), data, 0o644); err != nil {
		return Manifest{}, err
	}
	return m, nil
}

// Encode returns the manifest as indented JSON, the form Write stores.
func (m Manifest) Encode() ([]byte, error) {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode manifest: %w", err)
	}
	return append(b, '\n'), nil
}

// Read loads dir/manifest.json and verifies every listed file's size and sha256.
// Errors name the manifest field or the file at fault.
func Read(dir string) (Manifest, error) {
	if err := manifestkind.Expect(dir, manifestkind.Checkpoint); err != nil {
		return Manifest{}, err
	}
	name := filepath.Join(dir, ManifestFile)
	data, err := os.ReadFile(name)
	if err != nil {
		return Manifest{}, err
	}
	m, err := Parse(data)
	if err != nil {
		return Manifest{}, fmt.Errorf("%s: %w", name, err)
	}
	for _, f := range m.Files {
		if err := VerifyFile(filepath.Join(dir, filepath.FromSlash(f.Path)), f); err != nil {
			return Manifest{}, err
		}
	}
	return m, nil
}

// Parse decodes and validates a manifest; unknown fields are errors.
func Parse(data []byte) (Manifest, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var m Manifest
	if err := dec.Decode(&m); err != nil {
		return Manifest{}, decodeError(data, err)
	}
	if err := m.Validate(); err != nil {
		return Manifest{}, err
	}
	return m, nil
}

// VerifyFile checks that the file at name has f's size and sha256.
func VerifyFile(name string, f File) error {
	sum, size, err := digest.File(name)
	if err != nil {
		return fmt.Errorf("checkpoint file %s: %w", name, err)
	}
	if size != f.Size {
		return fmt.Errorf("checkpoint file %s: size %d, manifest says %d", name, size, f.Size)
	}
	if sum != f.SHA256 {
		return fmt.Errorf("checkpoint file %s: sha256 %s, manifest says %s", name, sum, f.SHA256)
	}
	return nil
}

// Validate checks the manifest's fields; errors name the field.
func (m Manifest) Validate() error {
	switch {
	case m.Format != FormatVersion:
		return fmt.Errorf("field format: %d, want %d", m.Format, FormatVersion)
	case m.Model == "":
		return errors.New("field model: empty")
	case m.Env == "":
		return errors.New("field env: empty")
	case m.Created.IsZero():
		return errors.New("field created: missing")
	}
	if _, err := json.Marshal(m.Hyper); err != nil {
		return fmt.Errorf("field hyper: %w", err)
	}
	for k, v := range m.Metrics {
		if _, err := json.Marshal(v); err != nil {
			return fmt.Errorf("field metrics.%s: %v is not a finite number", k, v)
		}
	}
	for k, steps := range m.History {
		for i, s := range steps {
			if _, err := json.Marshal(s.Value); err != nil {
				return fmt.Errorf("field history.%s[%d]: %v is not a finite number", k, i, s.Value)
			}
		}
	}
	seen := map[string]bool{}
	hasModel := false
	for i, f := range m.Files {
		if err := checkPath(f.Path); err != nil {
			return fmt.Errorf("field files[%d].path: %w", i, err)
		}
		if seen[f.Path] {
			return fmt.Errorf("field files[%d].path: %q listed twice", i, f.Path)
		}
		seen[f.Path] = true
		hasModel = hasModel || f.Path == ModelFile
		if f.Size < 0 {
			return fmt.Errorf("field files[%d].size: negative", i)
		}
		if b, err := hex.DecodeString(f.SHA256); err != nil || len(b) != sha256.Size {
			return fmt.Errorf("field files[%d].sha256: %q is not a sha256 hex digest", i, f.SHA256)
		}
		if b, err := hex.DecodeString(f.Content); f.Content != "" && (err != nil || len(b) != sha256.Size) {
			return fmt.Errorf("field files[%d].content: %q is not a sha256 hex digest", i, f.Content)
		}
	}
	if !hasModel {
		return fmt.Errorf("field files: no %s", ModelFile)
	}
	return nil
}

// checkPath accepts only clean, relative, slash-separated paths inside the checkpoint, so a
// manifest can never make a reader touch a file outside its directory.
func checkPath(p string) error {
	switch {
	case p == "":
		return errors.New("empty")
	case strings.Contains(p, `\`), strings.HasPrefix(p, "/"), path.Clean(p) != p:
		return fmt.Errorf("%q is not a clean relative path", p)
	case p == ManifestFile:
		return fmt.Errorf("%q is the manifest itself", p)
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." || part == "." || strings.HasPrefix(part, ".") {
			return fmt.Errorf("%q has a hidden or parent component", p)
		}
	}
	return nil
}

// hashDir lists the regular files under dir in path order with their sizes and sha256.
// Hidden files (atomicfile's temporaries among them) are not part of a checkpoint.
func hashDir(dir string) ([]File, error) {
	var files []File
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() || rel == ManifestFile {
			return nil
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("checkpoint file %s: not a regular file", p)
		}
		sum, size, err := digest.File(p)
		if err != nil {
			return fmt.Errorf("checkpoint file %s: %w", p, err)
		}
		content, err := ContentDigest(p, rel)
		if err != nil {
			return fmt.Errorf("checkpoint file %s: %w", p, err)
		}
		if content == sum {
			content = ""
		}
		files = append(files, File{Path: rel, Size: size, SHA256: sum, Content: content})
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	return files, nil
}

// decodeError turns a JSON decoding error into one naming the line and column.
func decodeError(data []byte, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	var off int64
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		return fmt.Errorf("field %s: %w", te.Field, err)
	default:
		return err
	}
	line, col := 1, 1
	for _, c := range data[:min(int(off), len(data))] {
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return fmt.Errorf("line %d, column %d: %w", line, col, err)
}
