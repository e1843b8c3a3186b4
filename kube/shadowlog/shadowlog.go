// Package shadowlog is the shadow run's record: for each pod the serving placer placed, what a
// candidate placer would have chosen on the same cluster state, and what each choice does to
// the fragment. The extender writes it as JSON lines (Writer); `schedrl eval --shadow` reads
// and summarises it (Read, Summarize). Standard library only, so eval can read it without
// the Kubernetes client.
package shadowlog

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Choice is one placer's answer to one pod.
type Choice struct {
	Model string `json:"model"`
	// Placed is false when the placer found no feasible choice.
	Placed bool   `json:"placed"`
	Node   string `json:"node,omitempty"`
	GPUs   []int  `json:"gpus,omitempty"`
	// FragDelta is how much the choice raises its node's fragment, milli-GPU (negative: lowers).
	FragDelta float64 `json:"frag_delta"`
	// LatencyUS is the placer's decision time in microseconds.
	LatencyUS float64 `json:"latency_us"`
}

// Record is one shadowed decision.
type Record struct {
	Time    time.Time `json:"time"`
	Pod     string    `json:"pod"`
	Serving Choice    `json:"serving"`
	Shadow  Choice    `json:"shadow"`
	// Agree: both placed the pod on the same node and GPUs.
	Agree bool `json:"agree"`
}

// Same reports whether two choices are the same placement.
func Same(a, b Choice) bool {
	return a.Placed && b.Placed && a.Node == b.Node && slices.Equal(a.GPUs, b.GPUs)
}

// Writer appends records to JSON-lines files in a folder. The open file is named *.part;
// at MaxBytes, or on Close, it is synced and renamed to shadow-<first record time>-<seq>.jsonl,
// so a reader globbing *.jsonl sees only whole files.
type Writer struct {
	dir      string
	maxBytes int64
	seq      int
	f        *os.File
	w        *bufio.Writer
	n        int64
	first    time.Time
}

// NewWriter writes into dir (created if missing); maxBytes <= 0 means 64 MiB.
func NewWriter(dir string, maxBytes int64) (*Writer, error) {
	if maxBytes <= 0 {
		maxBytes = 64 << 20
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("--shadow-log %s: %w", dir, err)
	}
	return &Writer{dir: dir, maxBytes: maxBytes}, nil
}

// Write appends one record, rotating when the file reaches the size limit.
func (w *Writer) Write(r Record) error {
	if w.f == nil {
		f, err := os.CreateTemp(w.dir, "shadow-*.jsonl.part")
		if err != nil {
			return err
		}
		w.f, w.w, w.n, w.first = f, bufio.NewWriter(f), 0, r.Time
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if _, err := w.w.Write(b); err != nil {
		return err
	}
	w.n += int64(len(b))
	if w.n >= w.maxBytes {
		return w.closeFile()
	}
	return nil
}

// closeFile syncs and renames the open file into its final name.
func (w *Writer) closeFile() error {
	if w.f == nil {
		return nil
	}
	f := w.f
	w.f = nil
	err := w.w.Flush()
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return err
	}
	w.seq++
	name := fmt.Sprintf("shadow-%s-%04d.jsonl", w.first.UTC().Format("20060102T150405.000000000Z"), w.seq)
	return os.Rename(f.Name(), filepath.Join(w.dir, name))
}

// Close closes the open file, if any, under its final name.
func (w *Writer) Close() error { return w.closeFile() }

// Read reads every record of the files, in order; a malformed line is an error naming file:line.
func Read(files []string) ([]Record, error) {
	var out []Record
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		recs, err := read(f, name)
		f.Close()
		if err != nil {
			return nil, err
		}
		out = append(out, recs...)
	}
	return out, nil
}

func read(r io.Reader, name string) ([]Record, error) {
	var out []Record
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		var rec Record
		dec := json.NewDecoder(strings.NewReader(text))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&rec); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		if rec.Pod == "" || rec.Time.IsZero() {
			return nil, fmt.Errorf("%s:%d: record without pod or time", name, line)
		}
		if !rec.Serving.Placed {
			return nil, fmt.Errorf("%s:%d: pod %s: the serving model did not place it (only placed pods are shadowed)", name, line, rec.Pod)
		}
		if rec.Agree != Same(rec.Serving, rec.Shadow) {
			return nil, fmt.Errorf("%s:%d: pod %s: agree is %v but the choices say otherwise", name, line, rec.Pod, rec.Agree)
		}
		out = append(out, rec)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}

// Summary is a shadow period in numbers.
type Summary struct {
	Decisions int `json:"decisions"`
	Agree     int `json:"agree"`
	// ShadowUnplaced counts pods the shadow model found no place for.
	ShadowUnplaced int `json:"shadow_unplaced"`
	// Agreement is Agree/Decisions with its 95% Wilson score interval.
	Agreement   float64 `json:"agreement"`
	AgreementLo float64 `json:"agreement_ci95_lo"`
	AgreementHi float64 `json:"agreement_ci95_hi"`
	// FragDiffMean is the mean of shadow minus serving fragment change, milli-GPU per pod,
	// over pods both placed (negative: the shadow fragments less).
	FragDiffMean float64 `json:"frag_diff_mean"`
	// FragDiffSum is that difference summed over the period.
	FragDiffSum float64 `json:"frag_diff_sum"`
	// Latencies of each placer's decision, microseconds.
	ServingP50US float64   `json:"serving_p50_us"`
	ServingP99US float64   `json:"serving_p99_us"`
	ShadowP50US  float64   `json:"shadow_p50_us"`
	ShadowP99US  float64   `json:"shadow_p99_us"`
	ServingModel []string  `json:"serving_models"`
	ShadowModel  []string  `json:"shadow_models"`
	From         time.Time `json:"from"`
	To           time.Time `json:"to"`
}

// Summarize computes the summary of a shadow period.
func Summarize(recs []Record) (Summary, error) {
	if len(recs) == 0 {
		return Summary{}, errors.New("no shadow records")
	}
	var s Summary
	var serving, shadow []float64
	both := 0
	s.From, s.To = recs[0].Time, recs[0].Time
	for _, r := range recs {
		s.Decisions++
		if r.Agree {
			s.Agree++
		}
		serving = append(serving, r.Serving.LatencyUS)
		if !r.Shadow.Placed {
			s.ShadowUnplaced++
		} else {
			both++
			s.FragDiffSum += r.Shadow.FragDelta - r.Serving.FragDelta
		}
		shadow = append(shadow, r.Shadow.LatencyUS)
		s.ServingModel = addOnce(s.ServingModel, r.Serving.Model)
		s.ShadowModel = addOnce(s.ShadowModel, r.Shadow.Model)
		if r.Time.Before(s.From) {
			s.From = r.Time
		}
		if r.Time.After(s.To) {
			s.To = r.Time
		}
	}
	if both > 0 {
		s.FragDiffMean = s.FragDiffSum / float64(both)
	}
	s.Agreement = float64(s.Agree) / float64(s.Decisions)
	s.AgreementLo, s.AgreementHi = Wilson(s.Agree, s.Decisions, 1.959964)
	s.ServingP50US, s.ServingP99US = Quantile(serving, 0.5), Quantile(serving, 0.99)
	s.ShadowP50US, s.ShadowP99US = Quantile(shadow, 0.5), Quantile(shadow, 0.99)
	return s, nil
}

func addOnce(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// Wilson is the Wilson score interval of k successes in n trials at z standard errors:
// unlike the normal approximation it stays inside [0, 1] when agreement is near 1.
func Wilson(k, n int, z float64) (lo, hi float64) {
	if n == 0 {
		return 0, 1
	}
	p, nf := float64(k)/float64(n), float64(n)
	d := 1 + z*z/nf
	c := (p + z*z/(2*nf)) / d
	h := z * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf)) / d
	return math.Max(0, c-h), math.Min(1, c+h)
}

// Quantile is the q-quantile by the nearest-rank rule (0 for no values).
func Quantile(v []float64, q float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	k := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(0, min(k, len(s)-1))]
}
