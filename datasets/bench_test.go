package datasets

import (
	"fmt"
	"io"
	"path/filepath"
	"testing"
)

// benchLogs writes n full-cluster (1213 nodes) tune-1.3 expert logs into dir.
func benchLogs(b *testing.B, dir string, n int) {
	b.Helper()
	for seed := range n {
		writeFile(b, filepath.Join(dir, fmt.Sprintf("fgd-%d.jsonl", seed)), makeRun(b, 0, 1.3, uint64(42+seed)).log)
	}
}

// BenchmarkBuild reports rows written per second and Parquet bytes per row for full-cluster
// expert logs (the acceptance measure is the `datasets build` run on FGD logs; this is its
// repeatable counterpart).
func BenchmarkBuild(b *testing.B) {
	dir := b.TempDir()
	benchLogs(b, dir, 2)
	b.ResetTimer()
	var rows, bytes int64
	for i := range b.N {
		o := testOptions(filepath.Join(dir, "*.jsonl"), filepath.Join(dir, fmt.Sprint("ds", i)))
		o.ShardRows, o.RowGroupRows = 100_000, 8192
		_, st, err := Build(o)
		if err != nil {
			b.Fatal(err)
		}
		rows, bytes = rows+st.Rows, bytes+st.Bytes
	}
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(bytes)/float64(rows), "bytes/row")
}

// BenchmarkBatches reports read-back batches of 256 per second with rebuilt observations.
func BenchmarkBatches(b *testing.B) {
	dir := b.TempDir()
	benchLogs(b, dir, 2)
	out := filepath.Join(dir, "ds")
	o := testOptions(filepath.Join(dir, "*.jsonl"), out)
	o.ValFraction = 0
	if _, _, err := Build(o); err != nil {
		b.Fatal(err)
	}
	d, err := Open(out)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	batches := 0
	for epoch := 0; batches < b.N; epoch++ {
		bo := DefaultBatchOptions(SplitTrain, 256)
		bo.Epoch = epoch
		it, err := d.Batches(bo)
		if err != nil {
			b.Fatal(err)
		}
		for batches < b.N {
			if _, err := it.Next(); err == io.EOF {
				break
			} else if err != nil {
				b.Fatal(err)
			}
			batches++
		}
		it.Close()
	}
	b.ReportMetric(float64(batches)/b.Elapsed().Seconds(), "batches/s")
}
