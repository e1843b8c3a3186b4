package podlog

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/schedrl/schedrl/sim"
)

// A log file is written under a hidden temporary name (readers skip it, atomicfile.IsTemp) and,
// when closed, synced and renamed to decisions-<opened>-<sha256 prefix>.jsonl: the name says
// when it began (so names sort in time order) and what it holds.
const (
	filePrefix = "decisions-"
	fileExt    = ".jsonl"
	openSuffix = ".tmp-open"
	stampFmt   = "20060102T150405.000000000Z"
)

// openFile is the log file being written.
type openFile struct {
	f      *os.File
	stamp  string
	sum    hash.Hash
	n      int64
	opened time.Time
}

func (o *openFile) Write(p []byte) (int, error) {
	n, err := o.f.Write(p)
	o.sum.Write(p[:n])
	o.n += int64(n)
	return n, err
}

// createOpen starts a log file in dir for a log opened at t.
func createOpen(dir string, t time.Time) (*openFile, error) {
	stamp := t.UTC().Format(stampFmt)
	f, err := os.OpenFile(filepath.Join(dir, openName(stamp)), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("decision log: %w", err)
	}
	return &openFile{f: f, stamp: stamp, sum: sha256.New(), opened: t}, nil
}

func openName(stamp string) string { return "." + filePrefix + stamp + fileExt + openSuffix }

// closedName is the content-addressed name of a closed log file.
func closedName(stamp string, sum []byte) string {
	return filePrefix + stamp + "-" + hex.EncodeToString(sum)[:16] + fileExt
}

// commit syncs the file and renames it to its closed name; it returns the new path.
func (o *openFile) commit(dir string) (string, error) {
	if err := o.f.Sync(); err != nil {
		o.f.Close()
		return "", fmt.Errorf("decision log: sync: %w", err)
	}
	if err := o.f.Close(); err != nil {
		return "", fmt.Errorf("decision log: close: %w", err)
	}
	path := filepath.Join(dir, closedName(o.stamp, o.sum.Sum(nil)))
	if err := os.Rename(o.f.Name(), path); err != nil {
		return "", fmt.Errorf("decision log: %w", err)
	}
	syncDir(dir)
	return path, nil
}

// syncDir makes a rename in dir durable (best effort: not every file system syncs folders).
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// Recover closes the log files a process that stopped without closing them left in dir: each
// is cut after its last complete line (a write cut short by a crash), checked by replaying it,
// and renamed to its content-addressed name; a file without a complete header is removed, and
// one that does not replay is kept aside under a hidden name (…tmp-corrupt) and reported.
// It returns the paths of the files it closed.
func Recover(dir string) (closed []string, err error) {
	matches, err := filepath.Glob(filepath.Join(dir, openName("*")))
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, path := range matches {
		out, err := recoverOne(dir, path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if out != "" {
			closed = append(closed, out)
		}
	}
	return closed, errors.Join(errs...)
}

func recoverOne(dir, path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	data = data[:bytes.LastIndexByte(data, '\n')+1]
	if len(data) == 0 {
		return "", os.Remove(path)
	}
	if err := Replay(bytes.NewReader(data)); err != nil {
		aside := strings.TrimSuffix(path, openSuffix) + ".tmp-corrupt"
		if rerr := os.Rename(path, aside); rerr != nil {
			return "", rerr
		}
		return "", fmt.Errorf("decision log %s does not replay, kept aside as %s: %w", path, aside, err)
	}
	if err := os.Truncate(path, int64(len(data))); err != nil {
		return "", err
	}
	stamp := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(path), "."+filePrefix), fileExt+openSuffix)
	sum := sha256.Sum256(data)
	out := filepath.Join(dir, closedName(stamp, sum[:]))
	if err := os.Rename(path, out); err != nil {
		return "", err
	}
	syncDir(dir)
	return out, nil
}

// Replay reads a node log and applies every event to sim.Replayer; errors name the line.
func Replay(r io.Reader) error {
	lr, err := sim.NewLogReader(r)
	if err != nil {
		return err
	}
	rep, err := sim.NewReplayer(lr.Header)
	if err != nil {
		return fmt.Errorf("line 1: %w", err)
	}
	for {
		ev, err := lr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := rep.Apply(ev); err != nil {
			return fmt.Errorf("line %d: %w", lr.Line(), err)
		}
	}
}
