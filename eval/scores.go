package eval

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/schedrl/schedrl/internal/config"
)

// A Report is an evaluation's metrics.json, the arrival protocol's (Metrics) or a timed
// world's (TimedMetrics), as the pipeline's gate and the registry read it.
type Report interface {
	// Score is one measure per policy, workload and seed, in the report's seed order.
	Score(metric string) (map[string]map[string][]float64, error)
	// Means is a policy's mean of each measure the report keeps, keyed MEASURE_WORKLOAD
	// (the workload's name with what a metric name may not hold replaced by '_').
	Means(policy string) map[string]float64
}

// ReadReport loads a metrics.json of either layout, told apart by its schema.
func ReadReport(path string) (Report, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var head struct {
		Schema string `json:"schema"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	switch head.Schema {
	case SchemaVersion:
		return ReadMetrics(path)
	case TimedSchemaVersion:
		return ReadTimedMetrics(path)
	}
	return nil, fmt.Errorf("%s: schema %q, want %q or %q", path, head.Schema, SchemaVersion, TimedSchemaVersion)
}

// Means is the policy's mean allocation at 100% and 130% arrival and fragment ratio at 130%
// on each trace.
func (m *Metrics) Means(policy string) map[string]float64 {
	out := map[string]float64{}
	for _, r := range m.Results {
		if r.Policy == policy {
			out["alloc_gpu_pct_100_"+r.Trace] = r.AllocGPUPct100.Mean
			out["alloc_gpu_pct_130_"+r.Trace] = r.AllocGPUPct130.Mean
			out["frag_ratio_pct_130_"+r.Trace] = r.FragRatioPct130.Mean
		}
	}
	return out
}

// Score is a timed measure (avg_jct_s, makespan_s, ... or queue_delay_KIND_mean_s) per
// policy, workload and seed.
func (m *TimedMetrics) Score(metric string) (map[string]map[string][]float64, error) {
	get, err := timedScore(metric)
	if err != nil {
		return nil, err
	}
	s := map[string]map[string][]float64{}
	for i := range m.Results {
		r := &m.Results[i]
		xs := make([]float64, len(r.PerSeed))
		for j, run := range r.PerSeed {
			v, ok := get(run)
			if !ok {
				return nil, fmt.Errorf("metric %q: %s on %s has no such measure (queueing delay by kind; the fragmentation rate: timed.kind drr)", metric, r.Policy, r.Workload)
			}
			xs[j] = v
		}
		if s[r.Policy] == nil {
			s[r.Policy] = map[string][]float64{}
		}
		s[r.Policy][r.Workload] = xs
	}
	return s, nil
}

// timedScore reads one measure off a run: a timedMeasures key, or queue_delay_KIND_mean_s
// for a world that keeps queueing delays by task kind.
func timedScore(metric string) (func(TimedSeedRun) (float64, bool), error) {
	for _, tm := range timedMeasures {
		if tm.key == metric {
			return func(r TimedSeedRun) (float64, bool) { return tm.get(r), true }, nil
		}
	}
	if metric == fragRatioKey {
		return func(r TimedSeedRun) (float64, bool) {
			if r.FragRatioMeanPct == nil {
				return 0, false
			}
			return *r.FragRatioMeanPct, true
		}, nil
	}
	if kind, ok := strings.CutPrefix(metric, "queue_delay_"); ok {
		if kind, ok = strings.CutSuffix(kind, "_mean_s"); ok && kind != "" {
			return func(r TimedSeedRun) (float64, bool) { v, ok := r.QueueDelay[kind]; return v, ok }, nil
		}
	}
	keys := make([]string, len(timedMeasures))
	for i, tm := range timedMeasures {
		keys[i] = tm.key
	}
	return nil, fmt.Errorf("metric %q: want one of %s, %s or queue_delay_KIND_mean_s", metric, strings.Join(keys, ", "), fragRatioKey)
}

// Means is the policy's mean of every timed measure and queueing delay on each workload.
func (m *TimedMetrics) Means(policy string) map[string]float64 {
	out := map[string]float64{}
	for i := range m.Results {
		r := &m.Results[i]
		if r.Policy != policy {
			continue
		}
		w := metricSafe(r.Workload)
		for _, tm := range timedMeasures {
			out[tm.key+"_"+w] = tm.set(r).Mean
		}
		for k, s := range r.QueueDelay {
			out["queue_delay_"+k+"_mean_s_"+w] = s.Mean
		}
		if r.FragRatioMeanPct != nil {
			out[fragRatioKey+"_"+w] = r.FragRatioMeanPct.Mean
		}
	}
	return out
}

// metricSafe keeps the characters every metric store takes (MLflow's: letters, digits, '_',
// '-', '.', '/') and replaces the rest, such as a generated workload's '=' and ','.
func metricSafe(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune("_-./", r):
			return r
		}
		return '_'
	}, s)
}

// WorkloadNames are the names cfg's workloads are reported under, before any run: trace
// names for the arrival protocol, the timed kind's names otherwise.
func WorkloadNames(cfg config.EvalConfig) ([]string, error) {
	name := func(raw string) (string, error) {
		ref, err := ParseTraceRef(raw, cfg.TracesDir)
		return ref.Name, err
	}
	if cfg.Timed.Kind != "" {
		kind, ok := timedKinds[cfg.Timed.Kind]
		if !ok {
			return nil, fmt.Errorf("timed.kind: %q, want one of %s", cfg.Timed.Kind, strings.Join(config.TimedKinds, ", "))
		}
		name = func(raw string) (string, error) { return kind.workloadName(raw, cfg.TracesDir) }
	}
	names := make([]string, len(cfg.Traces))
	for i, raw := range cfg.Traces {
		n, err := name(raw)
		if err != nil {
			return nil, fmt.Errorf("traces[%d]: %w", i, err)
		}
		names[i] = n
	}
	return names, nil
}
