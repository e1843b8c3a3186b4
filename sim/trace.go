package sim

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/schedrl/schedrl/internal/inputfile"
	"github.com/schedrl/schedrl/internal/textfile"
)

var (
	nodeColumns = []string{"sn", "cpu_milli", "memory_mib", "gpu", "model"}
	// Task lists always have the first five columns; the multigpu samples stop there.
	taskColumns         = []string{"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli"}
	taskOptionalColumns = []string{"gpu_spec", "qos", "pod_phase", "creation_time", "deletion_time", "scheduled_time"}
)

// csvTable reads a CSV whose header has every required column and otherwise only optional
// ones, in any order. Errors name file:line:column and the column.
type csvTable struct {
	path string
	head []string
	idx  map[string]int
	r    *csv.Reader
	rec  []string
}

func openTable(path string, required, optional []string, body func(t *csvTable) error) error {
	f, err := inputfile.Open(path, inputfile.Trace)
	if err != nil {
		return err
	}
	defer f.Close()
	text, err := textfile.Reader(f, path, "a CSV with header "+strings.Join(required, ","))
	if err != nil {
		return err
	}
	r := csv.NewReader(text)
	r.FieldsPerRecord = -1
	r.ReuseRecord = true
	head, err := r.Read()
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("%s:1: empty file, want header %s", path, strings.Join(required, ","))
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	t := &csvTable{path: path, idx: map[string]int{}, r: r}
	for i, h := range head {
		h = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
		if !slices.Contains(required, h) && !slices.Contains(optional, h) {
			return fmt.Errorf("%s:1:%d: extra column %q (want %s, optionally %s)", path, i+1, h, strings.Join(required, ","), strings.Join(optional, ","))
		}
		if _, dup := t.idx[h]; dup {
			return fmt.Errorf("%s:1:%d: column %q repeated", path, i+1, h)
		}
		t.idx[h] = i
		t.head = append(t.head, h)
	}
	for _, w := range required {
		if _, ok := t.idx[w]; !ok {
			return fmt.Errorf("%s:1: missing column %q (header %s, want %s)", path, w, strings.Join(t.head, ","), strings.Join(required, ","))
		}
	}
	return body(t)
}

// next reads the next row; it returns false at the end of the file.
func (t *csvTable) next() (bool, error) {
	rec, err := t.r.Read()
	if errors.Is(err, io.EOF) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("%s: %w", t.path, err)
	}
	t.rec = rec
	if len(rec) != len(t.head) {
		line, _ := t.r.FieldPos(0)
		what := "missing"
		if len(rec) > len(t.head) {
			what = "extra"
		}
		return false, fmt.Errorf("%s:%d: %s columns: %d fields, header has %d (%s)", t.path, line, what, len(rec), len(t.head), strings.Join(t.head, ","))
	}
	return true, nil
}

// has reports whether the file has the named column.
func (t *csvTable) has(col string) bool { _, ok := t.idx[col]; return ok }

// errf formats an error at the named column of the current row.
func (t *csvTable) errf(col string, format string, args ...any) error {
	line, column := t.r.FieldPos(t.idx[col])
	return fmt.Errorf("%s:%d:%d (%s): %s", t.path, line, column, col, fmt.Sprintf(format, args...))
}

// str is the named column's trimmed value ("" when the file lacks the column).
func (t *csvTable) str(col string) string {
	i, ok := t.idx[col]
	if !ok {
		return ""
	}
	return strings.TrimSpace(t.rec[i])
}

// int reads a non-negative integer; an empty (or absent) field gives empty when empty >= 0
// and is an error otherwise.
func (t *csvTable) int(col string, empty int64) (int64, error) {
	s := t.str(col)
	if s == "" && empty >= 0 {
		return empty, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, t.errf(col, "%q is not an integer", s)
	}
	if v < 0 {
		return 0, t.errf(col, "negative value %d", v)
	}
	return v, nil
}

func (t *csvTable) line() int { l, _ := t.r.FieldPos(0); return l }

// LoadNodes reads an openb node list (sn,cpu_milli,memory_mib,gpu,model). On any error nothing
// is returned.
func LoadNodes(path string) ([]Node, error) {
	var nodes []Node
	seen := map[string]int{}
	err := openTable(path, nodeColumns, nil, func(t *csvTable) error {
		for {
			ok, err := t.next()
			if !ok || err != nil {
				return err
			}
			n := Node{Name: t.str("sn"), GPUType: t.str("model")}
			if n.Name == "" {
				return t.errf("sn", "empty node name")
			}
			if prev, dup := seen[n.Name]; dup {
				return t.errf("sn", "duplicate node name %q (first on line %d)", n.Name, prev)
			}
			seen[n.Name] = t.line()
			if n.CPU, err = t.int("cpu_milli", -1); err != nil {
				return err
			}
			if n.Mem, err = t.int("memory_mib", -1); err != nil {
				return err
			}
			g, err := t.int("gpu", -1)
			if err != nil {
				return err
			}
			if g > MaxGPUsPerNode {
				return t.errf("gpu", "%d GPUs, at most %d", g, MaxGPUsPerNode)
			}
			n.GPUs = int(g)
			if n.GPUs > 0 && n.GPUType == "" {
				return t.errf("model", "empty GPU model on a node with %d GPUs", n.GPUs)
			}
			nodes = append(nodes, n)
		}
	})
	if err != nil {
		return nil, err
	}
	if len(nodes) == 0 {
		return nil, fmt.Errorf("%s: no nodes", path)
	}
	return nodes, nil
}

// LoadTasks reads an openb pod list. On any error nothing is returned.
func LoadTasks(path string) ([]Task, error) {
	var tasks []Task
	seen := map[string]int{}
	err := openTable(path, taskColumns, taskOptionalColumns, func(t *csvTable) error {
		for {
			ok, err := t.next()
			if !ok || err != nil {
				return err
			}
			task, err := parseTask(t)
			if err != nil {
				return err
			}
			if prev, dup := seen[task.Name]; dup {
				return t.errf("name", "duplicate task name %q (first on line %d)", task.Name, prev)
			}
			seen[task.Name] = t.line()
			tasks = append(tasks, task)
		}
	})
	if err != nil {
		return nil, err
	}
	if len(tasks) == 0 {
		return nil, fmt.Errorf("%s: no tasks", path)
	}
	return tasks, nil
}

func parseTask(t *csvTable) (Task, error) {
	task := Task{Name: t.str("name"), Deletion: -1, Scheduled: -1}
	var err error
	if task.Name == "" {
		return task, t.errf("name", "empty task name")
	}
	if task.CPU, err = t.int("cpu_milli", -1); err != nil {
		return task, err
	}
	if task.Mem, err = t.int("memory_mib", -1); err != nil {
		return task, err
	}
	n, err := t.int("num_gpu", -1)
	if err != nil {
		return task, err
	}
	if n > MaxGPUsPerNode {
		return task, t.errf("num_gpu", "num_gpu %d outside 0..%d", n, MaxGPUsPerNode)
	}
	task.NumGPU = int(n)
	if task.GPUMilli, err = t.int("gpu_milli", -1); err != nil {
		return task, err
	}
	switch {
	case task.NumGPU == 0 && task.GPUMilli != 0:
		return task, t.errf("gpu_milli", "gpu_milli %d on a CPU-only task (num_gpu 0), want 0", task.GPUMilli)
	case task.NumGPU > 0 && (task.GPUMilli < 1 || task.GPUMilli > MilliPerGPU):
		return task, t.errf("gpu_milli", "gpu_milli %d outside 1..%d for a GPU task", task.GPUMilli, MilliPerGPU)
	case task.NumGPU > 1 && task.GPUMilli != MilliPerGPU:
		return task, t.errf("gpu_milli", "whole-GPU task (num_gpu %d) with gpu_milli %d, want %d", task.NumGPU, task.GPUMilli, MilliPerGPU)
	}
	for _, typ := range strings.Split(t.str("gpu_spec"), "|") {
		if typ = strings.TrimSpace(typ); typ != "" && !slices.Contains(task.GPUTypes, typ) {
			task.GPUTypes = append(task.GPUTypes, typ)
		}
	}
	if t.has("creation_time") {
		if task.Creation, err = t.int("creation_time", -1); err != nil {
			return task, err
		}
	}
	if t.has("deletion_time") {
		if task.Deletion, err = t.int("deletion_time", -1); err != nil {
			return task, err
		}
		if task.Deletion < task.Creation {
			return task, t.errf("deletion_time", "deletion_time %d before creation_time %d", task.Deletion, task.Creation)
		}
	}
	if t.str("scheduled_time") == "" {
		return task, nil
	}
	if task.Scheduled, err = t.int("scheduled_time", -1); err != nil {
		return task, err
	}
	switch {
	case task.Scheduled < task.Creation:
		return task, t.errf("scheduled_time", "scheduled_time %d before creation_time %d", task.Scheduled, task.Creation)
	case task.Deletion >= 0 && task.Scheduled > task.Deletion:
		return task, t.errf("scheduled_time", "scheduled_time %d after deletion_time %d", task.Scheduled, task.Deletion)
	}
	return task, nil
}
