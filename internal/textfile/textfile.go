// Package textfile refuses binary input where a text format (CSV) is expected, in one line,
// before a parser turns it into a page of escaped bytes.
package textfile

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"unicode/utf8"
)

// sniff is how much of the start of a file is checked.
const sniff = 8 << 10

// Reader returns a reader of r's bytes after checking that the first 8 KiB are text: UTF-8
// without NUL bytes. The error names path, the byte offset and what was wanted.
func Reader(r io.Reader, path, want string) (io.Reader, error) {
	br := bufio.NewReaderSize(r, sniff)
	head, err := br.Peek(sniff)
	if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if at := binaryAt(head, len(head) == sniff); at >= 0 {
		return nil, fmt.Errorf("%s: not a text file (binary data at byte %d); want %s", path, at, want)
	}
	return br, nil
}

// binaryAt is the offset of the first NUL byte or invalid UTF-8 sequence in b, or -1. A
// sequence cut by the end of a truncated sample is not counted.
func binaryAt(b []byte, truncated bool) int {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return i
	}
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			if truncated && len(b)-i < utf8.UTFMax && !utf8.FullRune(b[i:]) {
				return -1
			}
			return i
		}
		i += n
	}
	return -1
}
