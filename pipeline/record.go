package pipeline

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/schedrl/schedrl/internal/atomicfile"
)

// Stage statuses in a run record.
const (
	StatusPending     = "pending"     // not reached (yet)
	StatusRunning     = "running"     // in progress, or the run was killed during it
	StatusCached      = "cached"      // skipped: its key already had a complete output
	StatusDone        = "done"        // built in this run
	StatusFailed      = "failed"      // Run returned an error
	StatusInterrupted = "interrupted" // the run was cancelled (signal) during it
	StatusBlocked     = "blocked"     // an input stage did not complete
)

// Run statuses.
const (
	RunRunning     = "running"
	RunOK          = "ok"
	RunFailed      = "failed"
	RunInterrupted = "interrupted"
	RunIncomplete  = "incomplete" // some stage is not available yet
)

// Record is the run record, rewritten atomically after every stage transition so that even a
// killed run leaves an accurate account of how far it got.
type Record struct {
	RunID        string        `json:"run_id"`
	ConfigFile   string        `json:"config_file,omitempty"`
	CodeRevision string        `json:"code_revision"`
	Started      time.Time     `json:"started"`
	Finished     *time.Time    `json:"finished,omitempty"`
	Status       string        `json:"status"`
	Stages       []StageRecord `json:"stages"`
}

// StageRecord is one stage's line in the run record.
type StageRecord struct {
	Name     string     `json:"name"`
	Status   string     `json:"status"`
	Key      string     `json:"key,omitempty"`
	Inputs   []string   `json:"inputs,omitempty"`
	Reason   string     `json:"reason,omitempty"` // why it ran rather than being skipped
	Forced   bool       `json:"forced,omitempty"`
	Resumed  bool       `json:"resumed,omitempty"`
	Started  *time.Time `json:"started,omitempty"`
	Finished *time.Time `json:"finished,omitempty"`
	Seconds  float64    `json:"seconds"`
	BuiltIn  *float64   `json:"built_seconds,omitempty"` // a cached stage: how long building it took
	Output   *Output    `json:"output,omitempty"`
	Files    int        `json:"files,omitempty"`
	Bytes    int64      `json:"bytes,omitempty"`
	Metric   *Metric    `json:"metric,omitempty"`
	Note     string     `json:"note,omitempty"`
	Error    string     `json:"error,omitempty"`
}

// RecordPath is where the record of run runID is saved.
func RecordPath(root, runID string) string { return filepath.Join(root, "runs", runID+".json") }

// save writes the record under its run id and as runs/latest.json.
func (r *Record) save(root string) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	if err := atomicfile.WriteFile(RecordPath(root, r.RunID), data, 0o644); err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(root, "runs", "latest.json"), data, 0o644)
}

// LoadRecord reads a run record; runID "" or "latest" reads the most recent one.
func LoadRecord(root, runID string) (*Record, error) {
	if runID == "" {
		runID = "latest"
	}
	path := RecordPath(root, runID)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read run record: %w", err)
	}
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

// WriteSummary prints the run as a table: stage, status, time, key metric, note.
func (r *Record) WriteSummary(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "STAGE\tSTATUS\tTIME\tKEY\tMETRIC\tNOTE\n")
	for _, s := range r.Stages {
		status := s.Status
		if s.Resumed {
			status += " (resumed)"
		}
		if s.Forced {
			status += " (forced)"
		}
		metric := "-"
		if s.Metric != nil {
			metric = s.Metric.Name + "=" + strconv.FormatFloat(s.Metric.Value, 'g', 6, 64)
		}
		key := s.Key
		if key == "" {
			key = "-"
		} else if len(key) > 12 {
			key = key[:12]
		}
		note := s.Note
		if s.Error != "" {
			note = s.Error
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", s.Name, status, fmtSeconds(s.Seconds), key, metric, note)
	}
	fmt.Fprintf(tw, "run %s\t%s\t%s\t\t\t\n", r.RunID, r.Status, fmtSeconds(r.seconds()))
	return tw.Flush()
}

func (r *Record) seconds() float64 {
	end := time.Now()
	if r.Finished != nil {
		end = *r.Finished
	}
	return end.Sub(r.Started).Seconds()
}

func fmtSeconds(s float64) string {
	switch {
	case s < 10:
		return strconv.FormatFloat(s, 'f', 2, 64) + "s"
	case s < 600:
		return strconv.FormatFloat(s, 'f', 1, 64) + "s"
	default:
		return time.Duration(s * float64(time.Second)).Round(time.Second).String()
	}
}
