// Package inputfile reads the files a user names (configs, traces, node and pod lists, tables,
// snapshots, decision logs) within a size limit per kind, so that no input, not even one that
// never ends (/dev/zero, a pipe) or a file of gigabytes given by mistake, makes a command read
// for ever or fill memory. A regular file over its limit is refused by its size before a byte
// is read; anything else fails when it passes the limit. Errors name the file and the limit.
package inputfile

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// Limit is the most bytes an input of one kind may have, and the kind's name for errors.
type Limit struct {
	Bytes int64
	What  string
}

// The limits, far above every file in data/ and configs/ (docs/reliability.md lists them).
var (
	Config = Limit{1 << 20, "a config file"}
	Table  = Limit{256 << 20, "a table, snapshot or manifest"}
	Trace  = Limit{2 << 30, "a trace, node list or decision log"}
)

func (l Limit) String() string {
	return fmt.Sprintf("%s may have at most %s", l.What, size(l.Bytes))
}

func size(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.3g GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.3g MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d bytes", n)
}

// ErrTooLarge matches (errors.Is) every error of an input over its limit.
var ErrTooLarge = errors.New("input over its size limit")

type tooLarge struct{ msg string }

func (e tooLarge) Error() string        { return e.msg }
func (e tooLarge) Is(target error) bool { return target == ErrTooLarge }

// Open opens path for reading at most l.Bytes bytes.
func Open(path string, l Limit) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if st.IsDir() {
		f.Close()
		return nil, fmt.Errorf("%s is a directory; want a file", path)
	}
	if st.Mode().IsRegular() && st.Size() > l.Bytes {
		f.Close()
		return nil, tooLarge{fmt.Sprintf("%s: %s, over the limit (%s)", path, size(st.Size()), l)}
	}
	return &limited{f: f, path: path, l: l, left: l.Bytes}, nil
}

// ReadFile reads the whole of path, at most l.Bytes bytes.
func ReadFile(path string, l Limit) ([]byte, error) {
	r, err := Open(path, l)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

// limited fails a read once more than its limit was read: a device or pipe that never ends.
type limited struct {
	f    *os.File
	path string
	l    Limit
	left int64
}

func (r *limited) Read(p []byte) (int, error) {
	if r.left < 0 {
		return 0, r.tooLarge()
	}
	if int64(len(p)) > r.left+1 {
		p = p[:r.left+1]
	}
	n, err := r.f.Read(p)
	r.left -= int64(n)
	if r.left < 0 {
		return n - 1, r.tooLarge()
	}
	return n, err
}

func (r *limited) tooLarge() error {
	return tooLarge{fmt.Sprintf("%s: more than %s, and not a regular file (a device or a pipe that never ends?); %s", r.path, size(r.l.Bytes), r.l)}
}

func (r *limited) Close() error { return r.f.Close() }
