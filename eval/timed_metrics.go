package eval

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"

	"github.com/schedrl/schedrl/env"
)

// TimedSchemaVersion names the timed report's metrics.json layout, which is not the arrival
// protocol's: ReadMetrics refuses it by its schema. docs/eval.md documents every field.
const TimedSchemaVersion = "schedrl.eval.timed-metrics/v1"

// TimedPoint is one sample of a run's time series: GPUs allocated (% of capacity) and the jobs
// or tasks running and waiting at Time (seconds).
type TimedPoint struct {
	Time        float64
	AllocGPUPct float64
	Running     int
	Waiting     int
}

// TimedSeedRun is one policy on one timed workload and seed.
type TimedSeedRun struct {
	Seed        uint64  `json:"seed"`
	Jobs        int     `json:"jobs"` // jobs (or tasks) measured
	AvgJCT      float64 `json:"avg_jct_s"`
	P50JCT      float64 `json:"p50_jct_s"`
	P95JCT      float64 `json:"p95_jct_s"`
	P99JCT      float64 `json:"p99_jct_s"`
	Makespan    float64 `json:"makespan_s"`
	Utilization float64 `json:"utilization"` // busy GPU-time over GPU-time
	// AllocGPUMeanPct is the time mean of the GPUs allocated, % of capacity; QueueLenMean the
	// time mean of the jobs waiting (the kind's file says over which window).
	AllocGPUMeanPct float64 `json:"alloc_gpu_mean_pct"`
	QueueLenMean    float64 `json:"queue_length_mean"`
	// QueueDelay is the mean queueing delay (s) by task kind (tasks world: all, cpu, share,
	// one-gpu, multi-gpu, gpu).
	QueueDelay map[string]float64 `json:"queue_delay_mean_s,omitempty"`
	Rounds     int                `json:"rounds,omitempty"`
	// Migrations and DowntimeS are a defrag-online run's migrations started and their downtime.
	Migrations int     `json:"migrations,omitempty"`
	DowntimeS  float64 `json:"downtime_s,omitempty"`
	// FragRatioMeanPct is a drr run's time-averaged fragmentation rate (%).
	FragRatioMeanPct *float64 `json:"frag_ratio_mean_pct,omitempty"`
	// MAIFS counts a multi-agent policy's decision points, agents, coordination edges and the
	// conflicts the graph-free decoder would have had (fungible world).
	MAIFS       *env.MAIFSStats `json:"maifs,omitempty"`
	WallSeconds float64         `json:"wall_seconds"`
	JCT         []float64       `json:"-"` // per measured job, to jct.csv
	Series      []TimedPoint    `json:"-"` // to series.csv
}

// TimedResult aggregates one policy on one timed workload over its seeds.
type TimedResult struct {
	Policy          string             `json:"policy"`
	Workload        string             `json:"workload"`
	Seeds           []uint64           `json:"seeds"`
	AvgJCT          Summary            `json:"avg_jct_s"`
	P50JCT          Summary            `json:"p50_jct_s"`
	P95JCT          Summary            `json:"p95_jct_s"`
	P99JCT          Summary            `json:"p99_jct_s"`
	Makespan        Summary            `json:"makespan_s"`
	Utilization     Summary            `json:"utilization"`
	AllocGPUMeanPct Summary            `json:"alloc_gpu_mean_pct"`
	QueueLenMean    Summary            `json:"queue_length_mean"`
	QueueDelay      map[string]Summary `json:"queue_delay_mean_s,omitempty"`
	// FragRatioMeanPct summarises the runs' FragRatioMeanPct where they have one (drr).
	FragRatioMeanPct *Summary `json:"frag_ratio_mean_pct,omitempty"`
	// VsBaseline pairs each of PairedMetrics with the baseline's on the same seeds (absent for
	// the baseline itself).
	VsBaseline map[string]*Paired `json:"vs_baseline,omitempty"`
	PerSeed    []TimedSeedRun     `json:"per_seed"`
}

// TimedMetrics is the whole timed metrics.json document.
type TimedMetrics struct {
	Schema      string        `json:"schema"`
	Kind        string        `json:"kind"`
	Cluster     string        `json:"cluster"`
	Policies    []string      `json:"policies"`
	Workloads   []string      `json:"workloads"`
	Seeds       []uint64      `json:"seeds"`
	Baseline    string        `json:"baseline"`
	WallSeconds float64       `json:"wall_seconds"`
	Results     []TimedResult `json:"results"` // policies x workloads, policy-major
}

// fillJCT sets the JCT count, mean and percentiles (nearest rank) from run.JCT.
func (run *TimedSeedRun) fillJCT() {
	run.Jobs = len(run.JCT)
	if run.Jobs == 0 {
		return
	}
	sum := 0.0
	for _, x := range run.JCT {
		sum += x
	}
	run.AvgJCT = sum / float64(run.Jobs)
	xs := append([]float64(nil), run.JCT...)
	run.P50JCT, run.P95JCT, run.P99JCT = Percentile(xs, 50), Percentile(xs, 95), Percentile(xs, 99)
}

// timedMeasure is one per-seed number by its metrics.json key, and where its summary goes.
type timedMeasure struct {
	key string
	get func(TimedSeedRun) float64
	set func(*TimedResult) *Summary
}

// timedMeasures are the measures every timed kind fills, in report order.
var timedMeasures = []timedMeasure{
	{"avg_jct_s", func(r TimedSeedRun) float64 { return r.AvgJCT }, func(r *TimedResult) *Summary { return &r.AvgJCT }},
	{"p50_jct_s", func(r TimedSeedRun) float64 { return r.P50JCT }, func(r *TimedResult) *Summary { return &r.P50JCT }},
	{"p95_jct_s", func(r TimedSeedRun) float64 { return r.P95JCT }, func(r *TimedResult) *Summary { return &r.P95JCT }},
	{"p99_jct_s", func(r TimedSeedRun) float64 { return r.P99JCT }, func(r *TimedResult) *Summary { return &r.P99JCT }},
	{"makespan_s", func(r TimedSeedRun) float64 { return r.Makespan }, func(r *TimedResult) *Summary { return &r.Makespan }},
	{"utilization", func(r TimedSeedRun) float64 { return r.Utilization }, func(r *TimedResult) *Summary { return &r.Utilization }},
	{"alloc_gpu_mean_pct", func(r TimedSeedRun) float64 { return r.AllocGPUMeanPct }, func(r *TimedResult) *Summary { return &r.AllocGPUMeanPct }},
	{"queue_length_mean", func(r TimedSeedRun) float64 { return r.QueueLenMean }, func(r *TimedResult) *Summary { return &r.QueueLenMean }},
}

// PairedMetrics are the measures each policy is paired with the baseline on, seed by seed; the
// tasks world adds gpuDelayKey, the mean queueing delay of GPU tasks.
var PairedMetrics = []string{"avg_jct_s", "p99_jct_s", "makespan_s", "alloc_gpu_mean_pct"}

const gpuDelayKey = "queue_delay_gpu_mean_s"

// gpuDelays is the mean queueing delay of GPU tasks, seed by seed.
func gpuDelays(r *TimedResult) []float64 {
	xs := make([]float64, len(r.PerSeed))
	for i, run := range r.PerSeed {
		xs[i] = run.QueueDelay["gpu"]
	}
	return xs
}

func aggregateTimed(policy, workload string, runs []TimedSeedRun) TimedResult {
	r := TimedResult{Policy: policy, Workload: workload, PerSeed: runs}
	for _, run := range runs {
		r.Seeds = append(r.Seeds, run.Seed)
	}
	over := func(f func(TimedSeedRun) float64) Summary {
		xs := make([]float64, len(runs))
		for i, run := range runs {
			xs[i] = f(run)
		}
		return Summarize(xs)
	}
	for _, m := range timedMeasures {
		*m.set(&r) = over(m.get)
	}
	if len(runs) > 0 && runs[0].QueueDelay != nil {
		r.QueueDelay = map[string]Summary{}
		for _, k := range sortedKeys(runs[0].QueueDelay) {
			r.QueueDelay[k] = over(func(s TimedSeedRun) float64 { return s.QueueDelay[k] })
		}
	}
	if len(runs) > 0 && runs[0].FragRatioMeanPct != nil {
		s := over(func(s TimedSeedRun) float64 { return *s.FragRatioMeanPct })
		r.FragRatioMeanPct = &s
	}
	return r
}

// fragRatioKey is the drr kind's measure, the time-averaged fragmentation rate.
const fragRatioKey = "frag_ratio_mean_pct"

func fragRatios(r *TimedResult) []float64 {
	xs := make([]float64, len(r.PerSeed))
	for i, run := range r.PerSeed {
		xs[i] = *run.FragRatioMeanPct
	}
	return xs
}

// Find returns the result of policy on workload, or nil.
func (m *TimedMetrics) Find(policy, workload string) *TimedResult {
	for i := range m.Results {
		if m.Results[i].Policy == policy && m.Results[i].Workload == workload {
			return &m.Results[i]
		}
	}
	return nil
}

// seedScores is one measure of a result, seed by seed.
func seedScores(r *TimedResult, key string) []float64 {
	i := slices.IndexFunc(timedMeasures, func(m timedMeasure) bool { return m.key == key })
	xs := make([]float64, len(r.PerSeed))
	for j, run := range r.PerSeed {
		xs[j] = timedMeasures[i].get(run)
	}
	return xs
}

// pairWithBaseline fills every other policy's VsBaseline, workload by workload.
func (m *TimedMetrics) pairWithBaseline() {
	for i := range m.Results {
		r := &m.Results[i]
		base := m.Find(m.Baseline, r.Workload)
		if base == nil || r.Policy == m.Baseline {
			continue
		}
		r.VsBaseline = map[string]*Paired{}
		for _, key := range PairedMetrics {
			r.VsBaseline[key] = PairSeeds(m.Baseline, seedScores(r, key), seedScores(base, key))
		}
		if r.QueueDelay != nil && base.QueueDelay != nil {
			r.VsBaseline[gpuDelayKey] = PairSeeds(m.Baseline, gpuDelays(r), gpuDelays(base))
		}
		if r.FragRatioMeanPct != nil && base.FragRatioMeanPct != nil {
			r.VsBaseline[fragRatioKey] = PairSeeds(m.Baseline, fragRatios(r), fragRatios(base))
		}
	}
}

// ReadTimedMetrics loads a timed metrics.json and checks its schema version.
func ReadTimedMetrics(path string) (*TimedMetrics, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m TimedMetrics
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if m.Schema != TimedSchemaVersion {
		return nil, fmt.Errorf("%s: schema %q, want %q", path, m.Schema, TimedSchemaVersion)
	}
	return &m, nil
}

// timeMean is the time mean of f over series on [from, to]: each sample holds until the next
// one, or for at most hold seconds (0: no limit), after which the value is 0 (an idle cluster).
func timeMean(series []TimedPoint, from, to, hold float64, f func(TimedPoint) float64) float64 {
	if to <= from {
		return 0
	}
	sum := 0.0
	for i, p := range series {
		end := to
		if i+1 < len(series) {
			end = series[i+1].Time
		}
		if hold > 0 {
			end = min(end, p.Time+hold)
		}
		if lo, hi := max(p.Time, from), min(end, to); hi > lo {
			sum += f(p) * (hi - lo)
		}
	}
	return sum / (to - from)
}

// Runs counts the runs made: a workload the seed does not change runs once per policy.
func (m *TimedMetrics) Runs() int {
	n := 0
	for _, r := range m.Results {
		n += len(r.PerSeed)
	}
	return n
}
