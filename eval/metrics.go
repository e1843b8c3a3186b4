package eval

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"

	"github.com/schedrl/schedrl/sim"
)

// SchemaVersion names the metrics.json layout. Readers (the champion gate, the registry)
// must check it; any incompatible change bumps it. docs/eval.md documents every field.
const SchemaVersion = "schedrl.eval.metrics/v1"

// SeedRun is what one policy does on one workload (trace, tune, seed).
type SeedRun struct {
	Seed         uint64         `json:"seed"`
	Tasks        int            `json:"tasks"`
	Placed       int            `json:"placed"`
	FailedByKind map[string]int `json:"failed_by_kind"`
	// AllocGPUPct100 and AllocGPUPct130 are read off the curve; a workload that never
	// reaches 130% arrival (tune < 1.3) reports its last point as the 130% value.
	AllocGPUPct100  float64          `json:"alloc_gpu_pct_100"`
	AllocGPUPct130  float64          `json:"alloc_gpu_pct_130"`
	FragRatioPct100 float64          `json:"frag_ratio_pct_100"`
	FragRatioPct130 float64          `json:"frag_ratio_pct_130"`
	FragGPU130      float64          `json:"frag_gpu_130"`
	LatencyP50Us    float64          `json:"decision_latency_p50_us"`
	LatencyP99Us    float64          `json:"decision_latency_p99_us"`
	WallSeconds     float64          `json:"wall_seconds"`
	Defrag          *DefragRun       `json:"defrag,omitempty"`
	Curve           []sim.CurvePoint `json:"-"` // goes to curves.csv, not metrics.json
}

// DefragRun holds what a defragmentation policy achieved on one starting state.
type DefragRun struct {
	FragRemovedGPU     float64 `json:"frag_removed_gpu"`
	PendingGPUPlaced   float64 `json:"pending_gpu_placed"`
	MigrationsUsed     int     `json:"migrations_used"`
	PlanLatencySeconds float64 `json:"plan_latency_seconds"`
}

// Result aggregates one policy on one workload over its seeds.
type Result struct {
	Policy          string             `json:"policy"`
	PolicyKind      PolicyKind         `json:"policy_kind"`
	Trace           string             `json:"trace"`
	TracePath       string             `json:"trace_path"`
	Tune            float64            `json:"tune"`
	Seeds           []uint64           `json:"seeds"`
	AllocGPUPct100  Summary            `json:"alloc_gpu_pct_100"`
	AllocGPUPct130  Summary            `json:"alloc_gpu_pct_130"`
	FragRatioPct100 Summary            `json:"frag_ratio_pct_100"`
	FragRatioPct130 Summary            `json:"frag_ratio_pct_130"`
	FragGPU130      Summary            `json:"frag_gpu_130"`
	FailedByKind    map[string]Summary `json:"failed_by_kind"`
	LatencyP50Us    Summary            `json:"decision_latency_p50_us"`
	LatencyP99Us    Summary            `json:"decision_latency_p99_us"`
	Defrag          *DefragSummary     `json:"defrag,omitempty"`
	Paper           *PaperPoint        `json:"paper,omitempty"`
	// VsBaseline pairs alloc_gpu_pct_130 with the baseline policy's on the same seeds
	// (absent for the baseline itself).
	VsBaseline *Paired   `json:"vs_baseline_alloc_gpu_pct_130,omitempty"`
	PerSeed    []SeedRun `json:"per_seed"`
}

// DefragSummary aggregates DefragRun over seeds.
type DefragSummary struct {
	FragRemovedGPU     Summary `json:"frag_removed_gpu"`
	PendingGPUPlaced   Summary `json:"pending_gpu_placed"`
	MigrationsUsed     Summary `json:"migrations_used"`
	PlanLatencySeconds Summary `json:"plan_latency_seconds"`
}

// PaperPoint is the ATC'23 paper's published mean for the same heuristic and trace (seeds 42..51).
type PaperPoint struct {
	Policy         string  `json:"policy"`
	AllocGPUPct100 float64 `json:"alloc_gpu_pct_100"`
	AllocGPUPct130 float64 `json:"alloc_gpu_pct_130"`
	// FragGPUPct130 is the fragmented GPU at 130% in percent of the cluster's GPUs, when the
	// artifact's fragment table was found.
	FragGPUPct130 *float64 `json:"frag_gpu_pct_130,omitempty"`
	Seeds         int      `json:"seeds"`
}

// Metrics is the whole metrics.json document.
type Metrics struct {
	Schema      string   `json:"schema"`
	Nodes       string   `json:"nodes"`
	CapacityGPU float64  `json:"capacity_gpu"` // the cluster's GPUs
	Policies    []string `json:"policies"`
	Traces      []string `json:"traces"`
	Tune        float64  `json:"tune"`
	Seeds       []uint64 `json:"seeds"`
	Baseline    string   `json:"baseline"` // the policy the others are paired with
	WallSeconds float64  `json:"wall_seconds"`
	Results     []Result `json:"results"`
}

// Find returns the result of policy on trace, or nil.
func (m *Metrics) Find(policy, trace string) *Result {
	for i := range m.Results {
		if m.Results[i].Policy == policy && m.Results[i].Trace == trace {
			return &m.Results[i]
		}
	}
	return nil
}

// ReadMetrics loads a metrics.json and checks its schema version.
func ReadMetrics(path string) (*Metrics, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m Metrics
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if m.Schema != SchemaVersion {
		return nil, fmt.Errorf("%s: schema %q, want %q", path, m.Schema, SchemaVersion)
	}
	return &m, nil
}

// aggregate summarises one policy's runs (sorted by seed) on one workload.
func aggregate(ref PolicyRef, trace TraceRef, tune float64, runs []SeedRun) Result {
	r := Result{
		Policy: ref.Raw, PolicyKind: ref.Kind, Trace: trace.Name, TracePath: trace.Path,
		Tune: tune, PerSeed: runs, FailedByKind: map[string]Summary{},
	}
	over := func(f func(SeedRun) float64) Summary {
		xs := make([]float64, len(runs))
		for i, run := range runs {
			xs[i] = f(run)
		}
		return Summarize(xs)
	}
	kinds := map[string]bool{}
	for _, run := range runs {
		r.Seeds = append(r.Seeds, run.Seed)
		for k := range run.FailedByKind {
			kinds[k] = true
		}
	}
	r.AllocGPUPct100 = over(func(s SeedRun) float64 { return s.AllocGPUPct100 })
	r.AllocGPUPct130 = over(func(s SeedRun) float64 { return s.AllocGPUPct130 })
	r.FragRatioPct100 = over(func(s SeedRun) float64 { return s.FragRatioPct100 })
	r.FragRatioPct130 = over(func(s SeedRun) float64 { return s.FragRatioPct130 })
	r.FragGPU130 = over(func(s SeedRun) float64 { return s.FragGPU130 })
	r.LatencyP50Us = over(func(s SeedRun) float64 { return s.LatencyP50Us })
	r.LatencyP99Us = over(func(s SeedRun) float64 { return s.LatencyP99Us })
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		r.FailedByKind[k] = over(func(s SeedRun) float64 { return float64(s.FailedByKind[k]) })
	}
	if len(runs) > 0 && !slices.ContainsFunc(runs, func(s SeedRun) bool { return s.Defrag == nil }) {
		d := func(f func(*DefragRun) float64) Summary {
			return over(func(s SeedRun) float64 { return f(s.Defrag) })
		}
		r.Defrag = &DefragSummary{
			FragRemovedGPU:     d(func(x *DefragRun) float64 { return x.FragRemovedGPU }),
			PendingGPUPlaced:   d(func(x *DefragRun) float64 { return x.PendingGPUPlaced }),
			MigrationsUsed:     d(func(x *DefragRun) float64 { return float64(x.MigrationsUsed) }),
			PlanLatencySeconds: d(func(x *DefragRun) float64 { return x.PlanLatencySeconds }),
		}
	}
	return r
}

// pairWithBaseline fills every other policy's VsBaseline on each trace.
func (m *Metrics) pairWithBaseline() {
	alloc, _ := m.Score("alloc_gpu_pct_130")
	for i := range m.Results {
		r := &m.Results[i]
		if base, ok := alloc[m.Baseline][r.Trace]; ok && r.Policy != m.Baseline {
			r.VsBaseline = PairSeeds(m.Baseline, alloc[r.Policy][r.Trace], base)
		}
	}
}

// readCurve fills the headline numbers of run from its curve.
func (run *SeedRun) readCurve() {
	at := func(pct int) sim.CurvePoint {
		var last sim.CurvePoint
		for _, p := range run.Curve {
			if p.ArrivedPct > pct {
				break
			}
			last = p
		}
		return last
	}
	p100, p130 := at(100), at(130)
	run.AllocGPUPct100, run.FragRatioPct100 = p100.AllocGPUPct, p100.FragRatioPct
	run.AllocGPUPct130, run.FragRatioPct130, run.FragGPU130 = p130.AllocGPUPct, p130.FragRatioPct, p130.FragGPU
}
