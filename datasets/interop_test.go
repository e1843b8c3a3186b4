package datasets

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"
)

// pyarrowPython is the interpreter that scripts/setup.d/35-pyarrow.sh installs.
func pyarrowPython(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	py := filepath.Join(filepath.Dir(file), "..", ".deps", "venv-pyarrow", "bin", "python")
	if _, err := os.Stat(py); err != nil {
		t.Fatalf("pyarrow venv missing (%v): run `make setup` or scripts/setup.d/35-pyarrow.sh", err)
	}
	return py
}

// readWithPyarrow prints, as JSON, the shard's row count, column names and the given rows.
const readWithPyarrow = `
import json, sys
import pyarrow.parquet as pq
f = pq.ParquetFile(sys.argv[1])
t = f.read()
rows = [int(x) for x in sys.argv[2:]]
out = {"num_rows": t.num_rows, "columns": t.column_names,
       "codec": f.metadata.row_group(0).column(0).compression, "rows": {}}
for r in rows:
    rec = {}
    for name in t.column_names:
        v = t.column(name)[r].as_py()
        rec[name] = v.hex() if isinstance(v, bytes) else v
    out["rows"][str(r)] = rec
print(json.dumps(out))
`

// TestPyarrowReadsShard writes a shard with parquet-go and reads it back with pyarrow, a Parquet
// implementation that shares no code with ours. It fails, never skips, without pyarrow.
func TestPyarrowReadsShard(t *testing.T) {
	py := pyarrowPython(t)
	rows := syntheticRows(2500, 1213)
	dir := t.TempDir()
	sw := newShardWriter[Row](dir, SplitTrain, SchemaVersion, 10000, 1000)
	if _, err := sw.write(rows); err != nil {
		t.Fatal(err)
	}
	shards, err := sw.finish()
	if err != nil {
		t.Fatal(err)
	}
	if len(shards) != 1 {
		t.Fatalf("got %d shards, want 1", len(shards))
	}
	checkWithPyarrow(t, py, filepath.Join(dir, shards[0].Path), rows, []int{0, 1, 999, 1000, 2490, 2499})
}

// checkWithPyarrow compares pyarrow's view of a shard with the rows Go wrote to it.
func checkWithPyarrow(t *testing.T, py, shard string, rows []Row, check []int) {
	t.Helper()
	args := []string{"-c", readWithPyarrow, shard}
	for _, r := range check {
		args = append(args, itoa(r))
	}
	out, err := exec.Command(py, args...).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("pyarrow failed: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("pyarrow failed: %v", err)
	}
	var got struct {
		NumRows int                               `json:"num_rows"`
		Columns []string                          `json:"columns"`
		Codec   string                            `json:"codec"`
		Rows    map[string]map[string]interface{} `json:"rows"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("pyarrow output %q: %v", out, err)
	}
	if got.NumRows != len(rows) {
		t.Errorf("pyarrow sees %d rows, Go wrote %d", got.NumRows, len(rows))
	}
	if len(got.Columns) != len(Columns) {
		t.Fatalf("pyarrow columns %v, want %v", got.Columns, Columns)
	}
	for i, c := range Columns {
		if got.Columns[i] != c {
			t.Errorf("column %d: pyarrow %q, want %q", i, got.Columns[i], c)
		}
	}
	if got.Codec != "ZSTD" {
		t.Errorf("compression %q, want ZSTD", got.Codec)
	}
	for _, r := range check {
		want := rows[r]
		rec := got.Rows[itoa(r)]
		wantVals := map[string]interface{}{
			"episode": float64(want.Episode), "step": float64(want.Step), "task_id": want.TaskID,
			"task_cpu_milli": float64(want.TaskCPU), "task_gpu_milli": float64(want.TaskGPUMilli),
			"task_gpu_spec": want.TaskGPUSpec, "arrived_gpu_milli": float64(want.ArrivedMilli),
			"mask": hexString(want.Mask), "num_feasible": float64(want.NumFeasible),
			"action": float64(want.Action), "action_gpus": float64(want.ActionGPUs),
			"reward": float64(want.Reward), "done": want.Done, "return_to_go": float64(want.ReturnToGo),
		}
		for name, w := range wantVals {
			if rec[name] != w {
				t.Errorf("row %d column %s: pyarrow %v, Go wrote %v", r, name, rec[name], w)
			}
		}
		wantChanges := []interface{}{}
		for _, c := range want.Changes {
			wantChanges = append(wantChanges, map[string]interface{}{"task": c.Task, "node": float64(c.Node), "gpus": float64(c.GPUs)})
		}
		if got := rec["changes"]; !reflect.DeepEqual(got, wantChanges) {
			t.Errorf("row %d changes: pyarrow %v, Go wrote %v", r, got, wantChanges)
		}
		if want.LogProb == nil {
			if rec["log_prob"] != nil {
				t.Errorf("row %d log_prob: pyarrow %v, want null", r, rec["log_prob"])
			}
		} else if rec["log_prob"] != float64(*want.LogProb) {
			t.Errorf("row %d log_prob: pyarrow %v, Go wrote %v", r, rec["log_prob"], *want.LogProb)
		}
	}
}

func hexString(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

// TestPyarrowReadsBuiltDataset reads a shard of a dataset made by Build from expert logs.
func TestPyarrowReadsBuiltDataset(t *testing.T) {
	py := pyarrowPython(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.jsonl"), makeRun(t, 80, 1.3, 8).log)
	out := filepath.Join(dir, "ds")
	o := testOptions(filepath.Join(dir, "*.jsonl"), out)
	o.ValFraction = 0
	m, _, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	shard := filepath.Join(out, m.Splits[SplitTrain].Shards[0].Path)
	var rows []Row
	var schema string
	if err := scanShard(shard, func(r *Row) { rows = append(rows, *r) }, &schema); err != nil {
		t.Fatal(err)
	}
	if int64(len(rows)) != m.Splits[SplitTrain].Shards[0].Rows {
		t.Fatalf("Go reads %d rows, manifest says %d", len(rows), m.Splits[SplitTrain].Shards[0].Rows)
	}
	checkWithPyarrow(t, py, shard, rows, []int{0, 1, len(rows) / 2, len(rows) - 1})
}
