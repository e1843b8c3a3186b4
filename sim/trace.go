package sim

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
)

var (
	nodeColumns = []string{"sn", "cpu_milli", "memory_mib", "gpu", "model"}
	taskColumns = []string{"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec",
		"qos", "pod_phase", "creation_time", "deletion_time", "scheduled_time"}
)

// csvTable reads a CSV whose header must equal want; each row is handed to row with a field
// accessor. Errors name file:line:column and the column.
type csvTable struct {
	path string
	want []string
	r    *csv.Reader
	rec  []string
}

func openTable(path string, want []string, body func(t *csvTable) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.FieldsPerRecord = -1
	r.ReuseRecord = true
	t := &csvTable{path: path, want: want, r: r}
	head, err := r.Read()
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("%s:1: empty file, want header %s", path, strings.Join(want, ","))
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	head = slices.Clone(head)
	if len(head) > 0 {
		head[0] = strings.TrimPrefix(head[0], "\ufeff")
	}
	for i, w := range want {
		if i >= len(head) {
			return fmt.Errorf("%s:1:%d: missing column %q (header has %d columns, want %s)", path, i+1, w, len(head), strings.Join(want, ","))
		}
		if strings.TrimSpace(head[i]) != w {
			return fmt.Errorf("%s:1:%d: column %q, want %q", path, i+1, head[i], w)
		}
	}
	if len(head) > len(want) {
		return fmt.Errorf("%s:1:%d: extra column %q (want %s)", path, len(want)+1, head[len(want)], strings.Join(want, ","))
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
	if len(rec) != len(t.want) {
		line, _ := t.r.FieldPos(0)
		what := "missing"
		if len(rec) > len(t.want) {
			what = "extra"
		}
		return false, fmt.Errorf("%s:%d: %s columns: %d fields, want %d (%s)", t.path, line, what, len(rec), len(t.want), strings.Join(t.want, ","))
	}
	return true, nil
}

// errf formats an error at field col of the current row.
func (t *csvTable) errf(col int, format string, args ...any) error {
	line, column := t.r.FieldPos(col)
	return fmt.Errorf("%s:%d:%d (%s): %s", t.path, line, column, t.want[col], fmt.Sprintf(format, args...))
}

func (t *csvTable) str(col int) string { return strings.TrimSpace(t.rec[col]) }

// int reads a non-negative integer; empty is allowed only when empty >= 0 is given as default.
func (t *csvTable) int(col int, empty int64) (int64, error) {
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
	err := openTable(path, nodeColumns, func(t *csvTable) error {
		for {
			ok, err := t.next()
			if !ok || err != nil {
				return err
			}
			n := Node{Name: t.str(0), GPUType: t.str(4)}
			if n.Name == "" {
				return t.errf(0, "empty node name")
			}
			if prev, dup := seen[n.Name]; dup {
				return t.errf(0, "duplicate node name %q (first on line %d)", n.Name, prev)
			}
			seen[n.Name] = t.line()
			if n.CPU, err = t.int(1, -1); err != nil {
				return err
			}
			if n.Mem, err = t.int(2, -1); err != nil {
				return err
			}
			g, err := t.int(3, -1)
			if err != nil {
				return err
			}
			if g > MaxGPUsPerNode {
				return t.errf(3, "%d GPUs, at most %d", g, MaxGPUsPerNode)
			}
			n.GPUs = int(g)
			if n.GPUs > 0 && n.GPUType == "" {
				return t.errf(4, "empty GPU model on a node with %d GPUs", n.GPUs)
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
	err := openTable(path, taskColumns, func(t *csvTable) error {
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
				return t.errf(0, "duplicate task name %q (first on line %d)", task.Name, prev)
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
	task := Task{Name: t.str(0)}
	var err error
	if task.Name == "" {
		return task, t.errf(0, "empty task name")
	}
	if task.CPU, err = t.int(1, -1); err != nil {
		return task, err
	}
	if task.Mem, err = t.int(2, -1); err != nil {
		return task, err
	}
	n, err := t.int(3, -1)
	if err != nil {
		return task, err
	}
	if n > MaxGPUsPerNode {
		return task, t.errf(3, "num_gpu %d outside 0..%d", n, MaxGPUsPerNode)
	}
	task.NumGPU = int(n)
	if task.GPUMilli, err = t.int(4, -1); err != nil {
		return task, err
	}
	switch {
	case task.NumGPU == 0 && task.GPUMilli != 0:
		return task, t.errf(4, "gpu_milli %d on a CPU-only task (num_gpu 0), want 0", task.GPUMilli)
	case task.NumGPU > 0 && (task.GPUMilli < 1 || task.GPUMilli > MilliPerGPU):
		return task, t.errf(4, "gpu_milli %d outside 1..%d for a GPU task", task.GPUMilli, MilliPerGPU)
	case task.NumGPU > 1 && task.GPUMilli != MilliPerGPU:
		return task, t.errf(4, "whole-GPU task (num_gpu %d) with gpu_milli %d, want %d", task.NumGPU, task.GPUMilli, MilliPerGPU)
	}
	for _, typ := range strings.Split(t.str(5), "|") {
		if typ = strings.TrimSpace(typ); typ != "" && !slices.Contains(task.GPUTypes, typ) {
			task.GPUTypes = append(task.GPUTypes, typ)
		}
	}
	if task.Creation, err = t.int(8, -1); err != nil {
		return task, err
	}
	if task.Deletion, err = t.int(9, -1); err != nil {
		return task, err
	}
	if task.Deletion < task.Creation {
		return task, t.errf(9, "deletion_time %d before creation_time %d", task.Deletion, task.Creation)
	}
	if _, err = t.int(10, 0); err != nil {
		return task, err
	}
	return task, nil
}
