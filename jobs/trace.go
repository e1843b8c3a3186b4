package jobs

import (
	"bufio"
	"errors"
	"fmt"
	"github.com/schedrl/schedrl/internal/inputfile"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Job is one line of a Gavel trace.
type Job struct {
	Index          int // position among the trace's jobs: Gavel's job id, what --window counts
	Line           int // 1-based line in the trace file
	Type           JobType
	Steps          int64
	Arrival        float64 // seconds
	PriorityWeight float64
}

// Trace is a trace file's jobs in arrival order.
type Trace struct {
	Path string
	Jobs []Job
}

// ReadTrace reads a tab-separated Gavel trace as is: the 10-field form (job_type, command,
// working_directory, num_steps_arg, needs_data_dir, total_steps, scale_factor,
// priority_weight, SLO, arrival_time) or the msr traces' older 7-field form (job_type,
// command, num_steps_arg, needs_data_dir, total_steps, arrival_time, scale_factor), whose
// scale-factor-0 lines are skipped as Gavel's old parser skipped them.
func ReadTrace(path string) (*Trace, error) {
	f, err := inputfile.Open(path, inputfile.Trace)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tr := &Trace{Path: path}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(text) == "" {
			continue
		}
		j, skip, err := parseJobLine(text)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		if skip {
			continue
		}
		if n := len(tr.Jobs); n > 0 && j.Arrival < tr.Jobs[n-1].Arrival {
			return nil, fmt.Errorf("%s:%d: arrival %g is before the previous job's %g (a trace is in arrival order)", path, line, j.Arrival, tr.Jobs[n-1].Arrival)
		}
		j.Index, j.Line = len(tr.Jobs), line
		tr.Jobs = append(tr.Jobs, j)
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		return nil, fmt.Errorf("%s: a line longer than 1 MiB: not a Gavel trace", path)
	} else if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(tr.Jobs) == 0 {
		return nil, fmt.Errorf("%s: no jobs", path)
	}
	return tr, nil
}

func parseJobLine(text string) (Job, bool, error) {
	fields := strings.Split(text, "\t")
	var steps, scale, arrival, weight string
	switch len(fields) {
	case 10:
		steps, scale, weight, arrival = fields[5], fields[6], fields[7], fields[9]
	case 7:
		steps, arrival, scale, weight = fields[4], fields[5], fields[6], "1"
	default:
		return Job{}, false, fmt.Errorf("%d tab-separated fields, want 10 (or the msr traces' 7)", len(fields))
	}
	j := Job{Type: JobType{Model: fields[0]}}
	var err error
	if j.Type.Scale, err = strconv.Atoi(strings.TrimSpace(scale)); err != nil || j.Type.Scale < 0 {
		return j, false, fmt.Errorf("scale factor %q is not a non-negative integer", scale)
	}
	if j.Type.Scale == 0 {
		if len(fields) == 7 {
			return j, true, nil
		}
		return j, false, fmt.Errorf("scale factor 0")
	}
	if j.Steps, err = strconv.ParseInt(strings.TrimSpace(steps), 10, 64); err != nil {
		return j, false, fmt.Errorf("total steps %q is not an integer", steps)
	}
	if j.Steps <= 0 {
		return j, false, fmt.Errorf("total steps %d, want > 0", j.Steps)
	}
	if j.Arrival, err = strconv.ParseFloat(strings.TrimSpace(arrival), 64); err != nil || math.IsNaN(j.Arrival) || math.IsInf(j.Arrival, 0) {
		return j, false, fmt.Errorf("arrival time %q is not a number", arrival)
	}
	if j.Arrival < 0 {
		return j, false, fmt.Errorf("negative arrival time %g", j.Arrival)
	}
	if j.Arrival > MaxTime {
		return j, false, fmt.Errorf("arrival time %g s is beyond the limit of %g s", j.Arrival, float64(MaxTime))
	}
	if j.PriorityWeight, err = strconv.ParseFloat(strings.TrimSpace(weight), 64); err != nil || !(j.PriorityWeight > 0) || math.IsInf(j.PriorityWeight, 0) {
		return j, false, fmt.Errorf("priority weight %q, want a finite number > 0", weight)
	}
	return j, false, nil
}

// throughputsOf looks every job up in the table; the error names each missing (job type,
// scale factor), how many lines name it and the first of them.
func (tr *Trace) throughputsOf(t *Throughputs) ([][NumGPUs]float64, error) {
	out := make([][NumGPUs]float64, len(tr.Jobs))
	missing := map[JobType][]int{}
	for i, j := range tr.Jobs {
		v, ok := t.Alone(j.Type)
		if !ok {
			missing[j.Type] = append(missing[j.Type], j.Line)
		}
		out[i] = v
	}
	if len(missing) == 0 {
		return out, nil
	}
	keys := make([]JobType, 0, len(missing))
	lines := 0
	for k, l := range missing {
		keys = append(keys, k)
		lines += len(l)
	}
	sort.Slice(keys, func(a, b int) bool { return missing[keys[a]][0] < missing[keys[b]][0] })
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d lines name a job type with no throughput in the table:", tr.Path, lines)
	for _, k := range keys {
		l := missing[k]
		fmt.Fprintf(&b, "\n  %s: %d lines (first: line %d)", k, len(l), l[0])
	}
	return nil, fmt.Errorf("%s", b.String())
}
