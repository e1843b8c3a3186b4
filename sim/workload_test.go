package sim

import (
	"slices"
	"testing"
)

func traceTasks() []Task {
	var out []Task
	for i, r := range []struct {
		n     int
		milli int64
	}{{0, 0}, {1, 500}, {1, 1000}, {2, 1000}, {1, 250}} {
		out = append(out, Task{Name: string(rune('a' + i)), CPU: 1000, NumGPU: r.n, GPUMilli: r.milli, Creation: int64(10 - i), Deletion: int64(20 + i)})
	}
	return out
}

func TestTuneWorkload(t *testing.T) {
	trace := traceTasks()
	const capMilli = 10 * MilliPerGPU
	w1, err := TuneWorkload(trace, capMilli, 1.3, RNG(42, StreamWorkload))
	if err != nil {
		t.Fatal(err)
	}
	w2, _ := TuneWorkload(trace, capMilli, 1.3, RNG(42, StreamWorkload))
	w3, _ := TuneWorkload(trace, capMilli, 1.3, RNG(43, StreamWorkload))
	name := func(t Task) string { return t.Name }
	n1, n2, n3 := mapSlice(w1, name), mapSlice(w2, name), mapSlice(w3, name)
	if !slices.Equal(n1, n2) {
		t.Fatal("the same seed must give the same workload")
	}
	if slices.Equal(n1, n3) {
		t.Fatal("different seeds should give different workloads")
	}
	var total int64
	seen := map[string]bool{}
	for _, task := range w1 {
		total += task.TotalGPUMilli()
		if seen[task.Name] {
			t.Fatalf("duplicate name %s", task.Name)
		}
		seen[task.Name] = true
	}
	for _, task := range trace {
		if !seen[task.Name] {
			t.Fatalf("trace task %s missing", task.Name)
		}
	}
	if total > 13000 {
		t.Fatalf("total request %d exceeds 1.3 x capacity", total)
	}
	if slices.IsSortedFunc(n1, func(a, b string) int { return len(a) - len(b) }) {
		t.Fatal("workload is not shuffled: all trace tasks come first")
	}
	down, _ := TuneWorkload(trace, capMilli, 0.2, RNG(1, StreamWorkload))
	var dt int64
	for _, task := range down {
		dt += task.TotalGPUMilli()
	}
	if dt > 2000 || len(down) >= len(trace) {
		t.Fatalf("tune down kept %d tasks requesting %d", len(down), dt)
	}
	if _, err := TuneWorkload(nil, capMilli, 1.3, RNG(1, 1)); err == nil {
		t.Fatal("empty trace must be an error")
	}
}

func mapSlice[T, U any](xs []T, f func(T) U) []U {
	out := make([]U, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}

func TestTraceOrder(t *testing.T) {
	ev := TraceOrder(traceTasks())
	if len(ev) != 10 {
		t.Fatalf("%d events, want 10", len(ev))
	}
	if !slices.IsSortedFunc(ev, func(a, b TraceEvent) int { return int(a.Time - b.Time) }) {
		t.Fatal("events are not in time order")
	}
	if ev[0].Task.Name != "e" || ev[0].Delete || !ev[9].Delete || ev[9].Task.Name != "e" {
		t.Fatalf("first %+v last %+v", ev[0], ev[9])
	}
}
