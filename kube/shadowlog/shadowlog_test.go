package shadowlog

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func record(k int, agree bool) Record {
	at := time.Date(2026, 12, 6, 1, 0, k, 0, time.UTC)
	serving := Choice{Model: "placement@1", Placed: true, Node: "n1", GPUs: []int{0}, FragDelta: 10, LatencyUS: float64(100 + k)}
	shadow := Choice{Model: "placement@2", Placed: true, Node: "n1", GPUs: []int{0}, FragDelta: 4, LatencyUS: float64(200 + k)}
	if !agree {
		shadow.Node = "n2"
	}
	return Record{Time: at, Pod: "default/p" + string(rune('a'+k)), Serving: serving, Shadow: shadow, Agree: agree}
}

// TestWriterRotatesAndReadsBack: files close at the size limit under their final names, no
// *.part stays after Close, and reading them back in name order gives every record in order.
func TestWriterRotatesAndReadsBack(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWriter(dir, 600)
	if err != nil {
		t.Fatal(err)
	}
	var want []Record
	for k := range 10 {
		r := record(k, k%4 != 0)
		want = append(want, r)
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(files) < 3 {
		t.Fatalf("files %v: want rotation at 600 bytes", files)
	}
	for _, f := range files {
		if !strings.HasSuffix(f, ".jsonl") {
			t.Errorf("%s left open", f)
		}
	}
	got, err := Read(files)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("read %d records, want %d", len(got), len(want))
	}
	for k := range got {
		if got[k].Pod != want[k].Pod || got[k].Agree != want[k].Agree {
			t.Errorf("record %d: %+v, want %+v", k, got[k], want[k])
		}
	}
	s, err := Summarize(got)
	if err != nil {
		t.Fatal(err)
	}
	if s.Decisions != 10 || s.Agree != 7 || s.FragDiffMean != -6 || s.ServingP50US != 104 || s.ShadowP99US != 209 {
		t.Errorf("summary %+v", s)
	}
	if !(s.AgreementLo < 0.7 && 0.7 < s.AgreementHi) {
		t.Errorf("CI %v..%v does not hold 0.7", s.AgreementLo, s.AgreementHi)
	}
}

// TestReadNamesTheBadLine: each kind of bad line is an error naming file:line.
func TestReadNamesTheBadLine(t *testing.T) {
	good := `{"time":"2026-12-06T01:00:00Z","pod":"p","serving":{"model":"m","placed":true,"node":"n","gpus":[0],"frag_delta":0,"latency_us":1},"shadow":{"model":"m","placed":true,"node":"n","gpus":[0],"frag_delta":0,"latency_us":1},"agree":true}`
	for name, bad := range map[string]string{
		"truncated":     `{"time":"2026-12-06T01:00:00Z",`,
		"unknown field": strings.Replace(good, `"agree"`, `"agreed"`, 1),
		"no pod":        strings.Replace(good, `"pod":"p"`, `"pod":""`, 1),
		"agree wrong":   strings.Replace(good, `"agree":true`, `"agree":false`, 1),
		"not placed":    strings.Replace(good, `"placed":true`, `"placed":false`, 1),
	} {
		path := filepath.Join(t.TempDir(), "shadow.jsonl")
		if err := os.WriteFile(path, []byte(good+"\n"+bad+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Read([]string{path}); err == nil || !strings.Contains(err.Error(), path+":2:") {
			t.Errorf("%s: err = %v, want %s:2", name, err, path)
		}
	}
}

// TestWilson: the interval of a known case (10 of 20: 0.2993..0.7007) and its edges.
func TestWilson(t *testing.T) {
	lo, hi := Wilson(10, 20, 1.959964)
	if math.Abs(lo-0.2993) > 1e-3 || math.Abs(hi-0.7007) > 1e-3 {
		t.Errorf("Wilson(10, 20) = %v..%v", lo, hi)
	}
	if lo, hi := Wilson(20, 20, 1.959964); hi != 1 || lo < 0.8 {
		t.Errorf("Wilson(20, 20) = %v..%v", lo, hi)
	}
	if _, err := Summarize(nil); err == nil {
		t.Error("Summarize(nil): no error")
	}
}
