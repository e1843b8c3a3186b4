package datasets

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"
)

// zstdFast trades a little size for write speed; transitions compress well anyway.
var zstdFast = &zstd.Codec{Level: zstd.SpeedFastest}

// shardWriter writes one split's rows (Row, or MAIFSRow) into numbered shards of at most maxRows
// rows each.
type shardWriter[T any] struct {
	root, split  string // shards go to root/split/part-NNNNN.parquet
	maxRows      int
	rowGroupRows int
	shards       []ShardInfo
	file         *os.File
	buf          *bufio.Writer
	sum          hash.Hash
	counter      *countingWriter
	pw           *parquet.GenericWriter[T]
	rowsInShard  int
	schema       string // the layout's name, in the file's metadata
}

func newShardWriter[T any](root, split, schema string, maxRows, rowGroupRows int) *shardWriter[T] {
	return &shardWriter[T]{root: root, split: split, schema: schema, maxRows: maxRows, rowGroupRows: rowGroupRows}
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// write appends rows and returns where they landed: one segment per shard touched.
func (s *shardWriter[T]) write(rows []T) ([]Segment, error) {
	var segs []Segment
	for len(rows) > 0 {
		if s.pw == nil {
			if err := s.open(); err != nil {
				return nil, err
			}
		}
		n := min(len(rows), s.maxRows-s.rowsInShard)
		if _, err := s.pw.Write(rows[:n]); err != nil {
			return nil, fmt.Errorf("write %s: %w", s.file.Name(), err)
		}
		segs = append(segs, Segment{Shard: s.current(), FirstRow: int64(s.rowsInShard), Rows: int64(n)})
		s.rowsInShard += n
		rows = rows[n:]
		if s.rowsInShard == s.maxRows {
			if err := s.closeShard(); err != nil {
				return nil, err
			}
		}
	}
	return segs, nil
}

func (s *shardWriter[T]) current() string {
	return filepath.ToSlash(filepath.Join(s.split, fmt.Sprintf("part-%05d.parquet", len(s.shards))))
}

func (s *shardWriter[T]) open() error {
	path := filepath.Join(s.root, s.current())
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	s.file = f
	s.sum = sha256.New()
	s.counter = &countingWriter{w: io.MultiWriter(f, s.sum)}
	s.buf = bufio.NewWriterSize(s.counter, 1<<20)
	s.pw = parquet.NewGenericWriter[T](s.buf,
		parquet.Compression(zstdFast),
		parquet.MaxRowsPerRowGroup(int64(s.rowGroupRows)),
		parquet.CreatedBy("schedrl", s.schema, ""),
		parquet.KeyValueMetadata("schedrl.schema", s.schema),
	)
	s.rowsInShard = 0
	return nil
}

func (s *shardWriter[T]) closeShard() error {
	name := s.file.Name()
	err := s.pw.Close()
	if err == nil {
		err = s.buf.Flush()
	}
	if err == nil {
		err = s.file.Close()
	} else {
		s.file.Close()
	}
	if err != nil {
		return fmt.Errorf("finish %s: %w", name, err)
	}
	s.shards = append(s.shards, ShardInfo{
		Path: s.current(), Rows: int64(s.rowsInShard), Bytes: s.counter.n,
		SHA256: hex.EncodeToString(s.sum.Sum(nil)),
	})
	s.pw = nil
	return nil
}

// finish closes the open shard, if any, and returns every shard written.
func (s *shardWriter[T]) finish() ([]ShardInfo, error) {
	if s.pw != nil {
		if err := s.closeShard(); err != nil {
			return nil, err
		}
	}
	return s.shards, nil
}
