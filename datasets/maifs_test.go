package datasets

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/fungible"
	"github.com/schedrl/schedrl/fungible/fungibletest"
)

// maifsDataset records TUNE in SRTF order on a busy 8:8:8 cluster and writes it.
func maifsDataset(t *testing.T) (string, *env.MAIFS, []env.MAIFSSample) {
	t.Helper()
	m := fungibletest.Model(t)
	c := fungibletest.Cluster(t, "8:8:8")
	e, err := env.NewMAIFS(c, m, env.MAIFSOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rec := &env.MAIFSRecorder{Env: e, Rule: fungible.Tune, Every: 3}
	if _, err := fungible.Run(c, m, fungibletest.Work(t, m, 50, 400, 4), fungible.RunConfig{Policy: rec, Order: fungibletest.Order(t, "srtf")}); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "ds")
	if err := WriteMAIFS(dir, MAIFSManifest{Cluster: "8:8:8", ServerGPUs: 8, Options: e.Options()}, map[string][]env.MAIFSSample{SplitTrain: rec.Samples}, false); err != nil {
		t.Fatal(err)
	}
	return dir, e, rec.Samples
}

// A multi-agent dataset reads back into the very observations and labels it was written from.
func TestMAIFSDatasetRoundTrip(t *testing.T) {
	dir, e, want := maifsDataset(t)
	got, err := ReadMAIFS(dir, SplitTrain, e)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) || len(got) < 5 {
		t.Fatalf("%d points back, %d written", len(got), len(want))
	}
	held := 0
	for p := range want {
		a, b := want[p], got[p]
		if !slices.Equal(a.Obs.Agents, b.Obs.Agents) || !slices.Equal(a.Obs.Servers, b.Obs.Servers) || !slices.Equal(a.Obs.Cands, b.Obs.Cands) ||
			!slices.Equal(a.Actions, b.Actions) || !slices.Equal(a.Rank, b.Rank) {
			t.Fatalf("decision point %d differs after the round trip", p)
		}
		for _, st := range a.State.Present {
			if st.Held {
				held++
			}
		}
	}
	if held == 0 {
		t.Fatal("no job held an allocation: the previous-allocation columns are untested")
	}
	if _, err := ReadMAIFS(dir, SplitVal, e); err == nil || !strings.Contains(err.Error(), "no val split") {
		t.Fatalf("missing split: %v", err)
	}
}

// Bad datasets are named: a changed shard, and a build whose candidates differ.
func TestMAIFSDatasetRefusesMismatches(t *testing.T) {
	dir, e, _ := maifsDataset(t)
	fixed, err := env.NewMAIFS(e.Cluster(), e.Model(), env.MAIFSOptions{FixedDemand: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ReadMAIFS(dir, SplitTrain, fixed); err == nil || !strings.Contains(err.Error(), "candidates stored") {
		t.Fatalf("other options: %v", err)
	}
	m, err := ReadMAIFSManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	shard := filepath.Join(dir, m.Splits[SplitTrain].Shards[0].Path)
	data, err := os.ReadFile(shard)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 1
	if err := os.WriteFile(shard, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadMAIFS(dir, SplitTrain, e); err == nil || !strings.Contains(err.Error(), "sha256") {
		t.Fatalf("changed shard: %v", err)
	}
}

// pyarrow, which shares no code with parquet-go, reads the multi-agent rows: every column, the
// row count, the lists of a held job's GPUs.
func TestPyarrowReadsMAIFSDataset(t *testing.T) {
	py := pyarrowPython(t)
	dir, _, samples := maifsDataset(t)
	m, err := ReadMAIFSManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	rows := maifsRows(samples)
	k := slices.IndexFunc(rows, func(r MAIFSRow) bool { return r.Held && r.Action >= 0 })
	const script = `
import json, sys
import pyarrow.parquet as pq
t = pq.read_table(sys.argv[1])
r = int(sys.argv[2])
print(json.dumps({"num_rows": t.num_rows, "columns": t.column_names,
  "row": {n: t.column(n)[r].as_py() for n in t.column_names}}))
`
	out, err := exec.Command(py, "-c", script, filepath.Join(dir, m.Splits[SplitTrain].Shards[0].Path), itoa(k)).Output()
	if err != nil {
		t.Fatalf("pyarrow: %v", err)
	}
	var got struct {
		NumRows int            `json:"num_rows"`
		Columns []string       `json:"columns"`
		Row     map[string]any `json:"row"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if got.NumRows != len(rows) || !slices.Equal(got.Columns, MAIFSColumns) {
		t.Fatalf("pyarrow: %d rows, columns %v; Go wrote %d rows, columns %v", got.NumRows, got.Columns, len(rows), MAIFSColumns)
	}
	want := rows[k]
	servers := make([]any, len(want.PrevServers))
	for i, s := range want.PrevServers {
		servers[i] = float64(s)
	}
	for name, v := range map[string]any{"job_id": float64(want.JobID), "job_type": want.JobType, "held": true, "action": float64(want.Action),
		"num_candidates": float64(want.NumCands), "prev_cpus_per_gpu": want.PrevCPUs} {
		if got.Row[name] != v {
			t.Errorf("row %d column %s: pyarrow %v, Go wrote %v", k, name, got.Row[name], v)
		}
	}
	if g, _ := got.Row["prev_servers"].([]any); !slices.Equal(g, servers) {
		t.Errorf("row %d prev_servers: pyarrow %v, Go wrote %v", k, got.Row["prev_servers"], want.PrevServers)
	}
}
