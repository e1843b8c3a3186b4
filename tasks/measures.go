package tasks

import (
	"encoding/csv"
	"io"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/gonum/stat"
)

// Stats summarises a sample of durations (seconds).
type Stats struct {
	Tasks int     `json:"tasks"`
	Mean  float64 `json:"mean_s"`
	P50   float64 `json:"p50_s"`
	P95   float64 `json:"p95_s"`
	P99   float64 `json:"p99_s"`
}

func statsOf(x []float64) Stats {
	if len(x) == 0 {
		return Stats{}
	}
	s := slices.Clone(x)
	slices.Sort(s)
	q := func(p float64) float64 { return stat.Quantile(p, stat.Empirical, s, nil) }
	return Stats{Tasks: len(s), Mean: stat.Mean(s, nil), P50: q(0.5), P95: q(0.95), P99: q(0.99)}
}

// Classes of tasks the measures split by.
const (
	ClassCPU      = "cpu"       // no GPU
	ClassShare    = "share"     // a fraction of one GPU
	ClassOneGPU   = "one-gpu"   // one whole GPU
	ClassMultiGPU = "multi-gpu" // two or more whole GPUs
	ClassGPU      = "gpu"       // any GPU request: the three above
)

// class is a task's class among cpu, share, one-gpu, multi-gpu.
func class(a Arrival) string {
	switch t := a.Task; {
	case t.NumGPU == 0:
		return ClassCPU
	case t.Sharing():
		return ClassShare
	case t.NumGPU == 1:
		return ClassOneGPU
	default:
		return ClassMultiGPU
	}
}

// WholeGPU reports a task that asks for one or more whole GPUs (the one-gpu and multi-gpu
// classes): the tasks fragmentation makes wait.
func WholeGPU(a Arrival) bool { return a.Task.NumGPU > 0 && !a.Task.Sharing() }

// Measured lists the tasks that count: arrived at or after the warm-up, not rejected, and not
// of an injected burst.
func (r *Result) Measured() []int {
	var out []int
	for i, a := range r.Arrivals {
		if a.Time >= r.Warmup && !math.IsNaN(r.Start[i]) && !a.Burst {
			out = append(out, i)
		}
	}
	return out
}

// CompletionTime is task i's completion time: finish minus arrival (NaN when rejected).
func (r *Result) CompletionTime(i int) float64 { return r.Finish[i] - r.Arrivals[i].Time }

// QueueDelay is task i's queueing delay: start minus arrival (NaN when rejected).
func (r *Result) QueueDelay(i int) float64 { return r.Start[i] - r.Arrivals[i].Time }

// Completion is the completion-time statistics of the measured tasks.
func (r *Result) Completion() Stats {
	var x []float64
	for _, i := range r.Measured() {
		x = append(x, r.CompletionTime(i))
	}
	return statsOf(x)
}

// Delays is the queueing-delay statistics of the measured tasks: "all", and by class (cpu,
// share, one-gpu, multi-gpu, and gpu for the three GPU classes together).
func (r *Result) Delays() map[string]Stats {
	by := map[string][]float64{}
	for _, i := range r.Measured() {
		d, k := r.QueueDelay(i), class(r.Arrivals[i])
		by["all"] = append(by["all"], d)
		by[k] = append(by[k], d)
		if k != ClassCPU {
			by[ClassGPU] = append(by[ClassGPU], d)
		}
	}
	out := map[string]Stats{}
	for _, k := range []string{"all", ClassCPU, ClassShare, ClassOneGPU, ClassMultiGPU, ClassGPU} {
		out[k] = statsOf(by[k])
	}
	return out
}

// DelayStats is the queueing-delay statistics of the measured tasks that keep says to.
func (r *Result) DelayStats(keep func(Arrival) bool) Stats {
	var x []float64
	for _, i := range r.Measured() {
		if keep(r.Arrivals[i]) {
			x = append(x, r.QueueDelay(i))
		}
	}
	return statsOf(x)
}

// BurstDelays is the queueing-delay statistics of the injected burst's tasks (WithBurst),
// whenever they arrived; a rejected one (fitting no node of the empty cluster) is left out.
func (r *Result) BurstDelays() Stats {
	var x []float64
	for i, a := range r.Arrivals {
		if a.Burst && !math.IsNaN(r.Start[i]) {
			x = append(x, r.QueueDelay(i))
		}
	}
	return statsOf(x)
}

// WriteSeries writes the time series as CSV.
func WriteSeries(w io.Writer, series []Point) error {
	cw := csv.NewWriter(w)
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
	if err := cw.Write([]string{"time_s", "alloc_gpu_pct", "frag_gpu", "frag_ratio_pct", "running", "waiting", "free_gpus", "free_8gpu_nodes"}); err != nil {
		return err
	}
	for _, p := range series {
		if err := cw.Write([]string{f(p.Time), f(p.AllocGPUPct), f(p.FragGPU), f(p.FragRatioPct), strconv.Itoa(p.Running), strconv.Itoa(p.Waiting),
			strconv.Itoa(p.FreeGPUs), strconv.Itoa(p.FreeNodes8)}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
