package pipeline

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/schedrl/schedrl/internal/atomicfile"
)

// The cache under the pipeline directory:
//
//	stages/<stage>/<key>/out/          a complete output (what downstream stages read)
//	stages/<stage>/<key>/record.json   its completion record
//	stages/<stage>/<key>.partial/out/  an output being built (kept for resumable stages)
//	runs/<run id>.json, runs/latest.json
//	lock                               held (flock) by the running pipeline
//
// record.json is written into the partial directory before one rename makes the whole key
// directory appear, so a key directory exists only when it is complete.
type store struct{ root string }

type completion struct {
	Stage        string      `json:"stage"`
	Key          string      `json:"key"`
	Hash         string      `json:"hash"`
	Inputs       []Output    `json:"inputs"`
	CodeRevision string      `json:"code_revision"`
	Finished     time.Time   `json:"finished"`
	Seconds      float64     `json:"seconds"`
	Result       Result      `json:"result"`
	Files        []FileEntry `json:"files"`
}

func (s store) keyDir(stage, key string) string { return filepath.Join(s.root, "stages", stage, key) }

func (s store) partialDir(stage, key string) string {
	return filepath.Join(s.root, "stages", stage, key+".partial")
}

// lookup returns the completion record of stage@key when its output is complete and intact.
// A cheap size check catches outputs edited or truncated after the fact; such an output is
// reported as not cached (with the reason) and rebuilt.
func (s store) lookup(stage, key string) (*completion, string, error) {
	dir := s.keyDir(stage, key)
	data, err := os.ReadFile(filepath.Join(dir, "record.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	var c completion
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, "", fmt.Errorf("%s: %w", filepath.Join(dir, "record.json"), err)
	}
	for _, f := range c.Files {
		st, err := os.Stat(filepath.Join(dir, "out", filepath.FromSlash(f.Path)))
		if err != nil {
			return nil, fmt.Sprintf("cached output file %s is missing", f.Path), nil
		}
		if st.Size() != f.Size {
			return nil, fmt.Sprintf("cached output file %s changed size (%d, recorded %d)", f.Path, st.Size(), f.Size), nil
		}
	}
	return &c, "", nil
}

func (s store) output(c *completion) Output {
	return Output{Stage: c.Stage, Key: c.Key, Dir: filepath.Join(s.keyDir(c.Stage, c.Key), "out"), Hash: c.Hash}
}

// prepare returns the directory a stage builds its output in. A partial output left by an
// interrupted run is handed back when the stage can resume from it; otherwise it is cleared.
func (s store) prepare(stage, key string, resume bool) (dir string, resumed bool, err error) {
	partial := s.partialDir(stage, key)
	out := filepath.Join(partial, "out")
	if resume {
		entries, err := os.ReadDir(out)
		if err == nil && len(entries) > 0 {
			return out, true, nil
		}
	}
	if err := os.RemoveAll(partial); err != nil {
		return "", false, fmt.Errorf("clear %s: %w", partial, err)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", false, fmt.Errorf("create %s: %w", out, err)
	}
	return out, false, nil
}

// commit writes the completion record into the partial directory and renames it into place,
// replacing an older complete output of the same key (a forced rerun).
func (s store) commit(c *completion) error {
	partial := s.partialDir(c.Stage, c.Key)
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(partial, "record.json"), append(data, '\n'), 0o644); err != nil {
		return err
	}
	final := s.keyDir(c.Stage, c.Key)
	if _, err := os.Stat(final); err == nil {
		old := final + ".old"
		if err := os.RemoveAll(old); err != nil {
			return err
		}
		if err := os.Rename(final, old); err != nil {
			return fmt.Errorf("replace %s: %w", final, err)
		}
		defer os.RemoveAll(old)
	}
	if err := os.Rename(partial, final); err != nil {
		return fmt.Errorf("rename %s into place: %w", partial, err)
	}
	return syncDir(filepath.Dir(final))
}

func (s store) discard(stage, key string) error { return os.RemoveAll(s.partialDir(stage, key)) }

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// lock takes an exclusive flock on the pipeline directory, so two runs never build the same
// key at once. The kernel drops it when the process dies, even by kill -9.
func (s store) lock() (release func(), err error) {
	if err := os.MkdirAll(s.root, 0o755); err != nil {
		return nil, fmt.Errorf("create pipeline directory %s: %w", s.root, err)
	}
	path := filepath.Join(s.root, "lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: another pipeline run holds this directory (%w)", path, err)
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
