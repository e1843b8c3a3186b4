package textfile

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

func TestReader(t *testing.T) {
	csv := "sn,cpu_milli\nnode-1,96000\n"
	r, err := Reader(strings.NewReader(csv), "n.csv", "a CSV")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := io.ReadAll(r); string(got) != csv {
		t.Fatalf("read back %q", got)
	}
	for name, data := range map[string][]byte{
		"nul":    []byte("sn,cpu\x00\x01\x02"),
		"latin1": []byte("sn,caf\xe9\n"),
		"png":    {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0},
	} {
		_, err := Reader(bytes.NewReader(data), "x.csv", "a CSV")
		if err == nil || !strings.Contains(err.Error(), "x.csv: not a text file (binary data at byte") || strings.Count(err.Error(), "\n") > 0 {
			t.Errorf("%s: %v", name, err)
		}
	}
	// A multi-byte character cut by the end of the sample is text.
	long := strings.Repeat("a", sniff-1) + "é"
	if _, err := Reader(strings.NewReader(long), "l.csv", "a CSV"); err != nil {
		t.Errorf("cut character: %v", err)
	}
}
