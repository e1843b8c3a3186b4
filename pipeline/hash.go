package pipeline

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"

	"github.com/schedrl/schedrl/internal/checkpoint"
	"github.com/schedrl/schedrl/internal/digest"
)

// keyVersion changes when the way keys are computed changes, so old caches are not reused.
const keyVersion = "schedrl-pipeline-key/2"

// stageKey hashes everything a stage's output depends on. inputs must be in the stage's
// declared order; config is encoded as JSON (struct fields in order, map keys sorted).
func stageKey(name string, config any, inputs []Output, codeRevision string) (string, error) {
	cfg, err := json.Marshal(config)
	if err != nil {
		return "", fmt.Errorf("stage %s: encode config for its key: %w", name, err)
	}
	type in struct {
		Stage string `json:"stage"`
		Hash  string `json:"hash"`
	}
	ins := make([]in, len(inputs))
	for i, o := range inputs {
		ins[i] = in{o.Stage, o.Hash}
	}
	doc, err := json.Marshal(struct {
		Version  string          `json:"version"`
		Stage    string          `json:"stage"`
		Config   json.RawMessage `json:"config"`
		Inputs   []in            `json:"inputs"`
		Revision string          `json:"code_revision"`
	}{keyVersion, name, cfg, ins, codeRevision})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(doc)
	return hex.EncodeToString(sum[:])[:24], nil
}

// FileEntry is one file of a stage output, as recorded in its completion record.
type FileEntry struct {
	Path   string `json:"path"` // slash-separated, relative to the output directory
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// hashTree hashes every regular file under dir (sorted by path) and returns the entries and the
// output's content hash: a hash over each file's path and content digest
// (checkpoint.ContentDigest), which leaves wall-clock values (a manifest's created, training
// and eval wall times, throughputs, latencies) and the reports that print them out. So a clean
// rerun of the same code, config and seeds gives downstream stages the same keys, however
// long each stage took. The entries keep every file's size and sha256 for the cache check.
// Symlinks and other non-regular files are refused, since their meaning would not travel with
// the output.
func hashTree(dir string) ([]FileEntry, string, error) {
	var files []FileEntry
	contents := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: not a regular file (stage outputs hold only files and directories)", path)
		}
		rel = filepath.ToSlash(rel)
		sum, size, err := digest.File(path)
		if err != nil {
			return err
		}
		if contents[rel], err = checkpoint.ContentDigest(path, rel); err != nil {
			return err
		}
		files = append(files, FileEntry{Path: rel, Size: size, SHA256: sum})
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	h := sha256.New()
	for _, f := range files {
		if c := contents[f.Path]; c != "" {
			fmt.Fprintf(h, "%s\x00%s\n", f.Path, c)
		}
	}
	return files, hex.EncodeToString(h.Sum(nil)), nil
}

// HashFile returns the hex sha256 of a file; used for the code revision of a binary.
func HashFile(path string) (string, error) {
	sum, _, err := digest.File(path)
	return sum, err
}
