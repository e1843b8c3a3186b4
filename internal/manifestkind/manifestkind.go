// Package manifestkind tells what a directory holds by its manifest.json's schema field (a
// checkpoint's "format", a dataset's "schema_version"), so that a reader given the wrong kind
// of directory says so instead of failing on the first field it does not know.
package manifestkind

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/schedrl/schedrl/internal/inputfile"
)

// Kind is what a directory's manifest describes.
type Kind string

const (
	Checkpoint Kind = "checkpoint"
	Dataset    Kind = "dataset"
	EvalReport Kind = "eval report"
	LogSet     Kind = "folder of logs"
	Unknown    Kind = "unknown"
	Empty      Kind = "empty folder"
)

// metricsFile is an eval report's metrics; its "schema" names the report kind.
const metricsFile = "metrics.json"

// runRecordFile is a fine-tune's run record (finetune.RecordFile). A folder with it and no
// manifest is a fine-tune stopped before its first checkpoint: its rerun resumes there, so the
// folder is a checkpoint in the making, not a folder of logs.
const runRecordFile = "metrics.jsonl"

// DirOf tells what the existing directory dir holds: Empty; a Checkpoint or Dataset by its
// manifest; an EvalReport by its metrics.json; a Checkpoint by a fine-tune's run record; a LogSet when it holds only decision logs
// (*.jsonl) and set markers (*INCOMPLETE); else Unknown. Output checks use it so that --force
// never replaces one kind of output with another.
func DirOf(dir string) (Kind, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return Unknown, err
	}
	if len(entries) == 0 {
		return Empty, nil
	}
	if data, err := inputfile.ReadFile(filepath.Join(dir, ManifestFile), inputfile.Table); err == nil {
		return Of(data), nil
	}
	if data, err := inputfile.ReadFile(filepath.Join(dir, metricsFile), inputfile.Table); err == nil {
		var m struct {
			Schema string `json:"schema"`
		}
		if json.Unmarshal(data, &m) == nil && strings.HasPrefix(m.Schema, "schedrl.eval.") {
			return EvalReport, nil
		}
	}
	if _, err := os.Stat(filepath.Join(dir, runRecordFile)); err == nil {
		return Checkpoint, nil
	}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !(strings.HasSuffix(name, ".jsonl") || strings.HasSuffix(name, "INCOMPLETE") || strings.Contains(name, ".tmp-")) {
			return Unknown, nil
		}
	}
	return LogSet, nil
}

// ManifestFile is the manifest's name in every kind of directory.
const ManifestFile = "manifest.json"

// schemaField is the field that only manifests of each kind have.
var schemaField = map[Kind]string{Checkpoint: "format", Dataset: "schema_version"}

// Expect checks that dir exists and its manifest is of kind want. The error says "DIR does
// not exist", "DIR: not a K: no manifest.json" or "DIR is a dataset, not a checkpoint".
func Expect(dir string, want Kind) error {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s does not exist", dir)
	case err != nil:
		return err
	case !st.IsDir():
		return fmt.Errorf("%s is a file; a %s is a directory", dir, want)
	}
	data, err := inputfile.ReadFile(filepath.Join(dir, ManifestFile), inputfile.Table)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: not a %s: no %s", dir, want, ManifestFile)
	}
	if err != nil {
		return err
	}
	got := Of(data)
	switch got {
	case want:
		return nil
	case Unknown:
		return fmt.Errorf("%s: not a %s: %s has no %q field", dir, want, ManifestFile, schemaField[want])
	}
	return fmt.Errorf("%s is a %s, not a %s", dir, got, want)
}

// Of sniffs the kind of a manifest from its top-level fields.
func Of(manifest []byte) Kind {
	var fields map[string]json.RawMessage
	if json.Unmarshal(manifest, &fields) != nil {
		return Unknown
	}
	for _, k := range []Kind{Checkpoint, Dataset} {
		if _, ok := fields[schemaField[k]]; ok {
			return k
		}
	}
	return Unknown
}
