package eval

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/schedrl/schedrl/fungible"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/jobs"
)

func init() { registerTimedKind("jobs", jobsKind{}) }

// jobsKind is Gavel's DL-job world on GPU types (package jobs, schedrl's rounds): policies are
// jobs' queue policies (fifo, srtf, max_min_fairness_perf, ...), workloads Gavel trace files or
// generated mixes jobs=N,lam=S[,multigpu].
type jobsKind struct{}

func (jobsKind) gavelTables() {}

type jobsWorld struct {
	cfg      config.TimedEvalConfig
	cluster  jobs.Cluster
	table    *jobs.Throughputs
	policies []string
	names    []string
	traces   [][]*jobs.Trace // [workload][seed], read-only
	seeds    []bool          // [workload]: generated per seed
}

func (jobsKind) prepare(cfg config.EvalConfig, seeds []uint64, _ Options) (timedWorld, error) {
	t := cfg.Timed
	c, err := jobs.ParseCluster(t.Cluster, "")
	if err != nil {
		return nil, fmt.Errorf("timed.cluster: %w", err)
	}
	if t.ServersGPUs != "" {
		if c, err = jobs.ParseCluster(t.Cluster, t.ServersGPUs); err != nil {
			return nil, fmt.Errorf("timed.servers_gpus: %w", err)
		}
	}
	table, err := jobs.LoadThroughputs(t.Throughputs)
	if err != nil {
		return nil, fmt.Errorf("timed.throughputs: %w", err)
	}
	w := &jobsWorld{cfg: t, cluster: c, table: table}
	for i, p := range cfg.Policies {
		if _, err := jobs.NewPolicy(p); err != nil {
			return nil, fmt.Errorf("policies[%d]: %w", i, err)
		}
		w.policies = append(w.policies, strings.TrimSpace(p))
	}
	if w.names, w.traces, w.seeds, err = gavelWorkloads(cfg, seeds, table); err != nil {
		return nil, err
	}
	return w, nil
}

func (w *jobsWorld) workloads() []string { return w.names }

func (w *jobsWorld) seeded(workload int) bool { return w.seeds[workload] }

func (w *jobsWorld) describe() string {
	s := fmt.Sprintf("%d:%d:%d V100:P100:K80 GPUs", w.cluster.GPUs[jobs.V100], w.cluster.GPUs[jobs.P100], w.cluster.GPUs[jobs.K80])
	if w.cfg.ServersGPUs != "" {
		s += " in servers of " + w.cfg.ServersGPUs
	}
	return fmt.Sprintf("%s, rounds of %g s", s, w.cfg.Round)
}

// run measures every job of the workload. The series is sampled at each round boundary: the
// allocation mean counts the GPUs handed out there for the whole round (also those of jobs that
// finish inside it, which idle until the next boundary: utilization counts only busy time), from
// the first arrival to the makespan.
func (w *jobsWorld) run(policy, workload, seed int) (TimedSeedRun, error) {
	tr := w.traces[workload][seed]
	res, err := jobs.Run(tr, w.table, jobs.Config{Cluster: w.cluster, Policy: w.policies[policy], Round: w.cfg.Round})
	if err != nil {
		return TimedSeedRun{}, err
	}
	jct := make([]float64, 0, len(res.JCT))
	for i := range tr.Jobs {
		if v, ok := res.JCT[i]; ok {
			jct = append(jct, v)
		}
	}
	total := float64(w.cluster.Total())
	run := TimedSeedRun{Makespan: res.Makespan, Utilization: res.Utilization, Rounds: res.Rounds, JCT: jct}
	for _, s := range res.Series() {
		run.Series = append(run.Series, TimedPoint{Time: s.Time, AllocGPUPct: 100 * float64(s.GPUsBusy) / total, Running: s.Running, Waiting: s.Waiting})
	}
	first := tr.Jobs[0].Arrival
	run.AllocGPUMeanPct = timeMean(run.Series, first, res.Makespan, w.cfg.Round, func(p TimedPoint) float64 { return p.AllocGPUPct })
	run.QueueLenMean = timeMean(run.Series, first, res.Makespan, w.cfg.Round, func(p TimedPoint) float64 { return float64(p.Waiting) })
	run.fillJCT()
	return run, nil
}

// gavelWorkloads reads each of cfg.Traces as a Gavel trace file, or generates it for every seed
// when it is a spec jobs=N,lam=S[,multigpu] (Gavel's mix over the job types of
// timed.synergy_map). A trace file is the same workload on every seed: seeded is false for it.
func gavelWorkloads(cfg config.EvalConfig, seeds []uint64, table *jobs.Throughputs) (names []string, traces [][]*jobs.Trace, seeded []bool, err error) {
	var model *fungible.SpeedModel
	for i, raw := range cfg.Traces {
		raw = strings.TrimSpace(raw)
		perSeed := make([]*jobs.Trace, len(seeds))
		if strings.HasPrefix(raw, "jobs=") {
			spec, err := fungible.ParseWorkloadSpec(raw)
			if err != nil {
				return nil, nil, nil, fmt.Errorf("traces[%d]: %w", i, err)
			}
			if model == nil {
				m, err := fungible.ModelOf(table, timedWorldSpec(cfg.Timed, 0), "timed.")
				if err != nil {
					return nil, nil, nil, err
				}
				model = &m
			}
			for s, seed := range seeds {
				spec.Seed = seed
				work, err := fungible.Generate(model.Tput, model.Sens.JobTypes(), spec)
				if err != nil {
					return nil, nil, nil, fmt.Errorf("traces[%d] %q: %w", i, raw, err)
				}
				perSeed[s] = fungible.AsTrace(work, "generate:"+raw)
			}
			names, seeded = append(names, gavelWorkloadName(raw)), append(seeded, true)
		} else {
			tr, err := jobs.ReadTrace(raw)
			if err != nil {
				return nil, nil, nil, fmt.Errorf("traces[%d]: %w", i, err)
			}
			if len(tr.Jobs) == 0 {
				return nil, nil, nil, fmt.Errorf("traces[%d]: %s holds no job", i, raw)
			}
			for s := range seeds {
				perSeed[s] = tr
			}
			names, seeded = append(names, gavelWorkloadName(raw)), append(seeded, false)
		}
		traces = append(traces, perSeed)
	}
	return names, traces, seeded, nil
}

func (jobsKind) workloadName(raw, _ string) (string, error) { return gavelWorkloadName(raw), nil }

// gavelWorkloadName names a generated workload by its spec and a trace file by its base name.
func gavelWorkloadName(raw string) string {
	raw = strings.TrimSpace(raw)
	if strings.HasPrefix(raw, "jobs=") {
		return raw
	}
	return strings.TrimSuffix(filepath.Base(raw), ".trace")
}

// timedWorldSpec is the fungible world of the timed section, with servers of serverGPUs.
func timedWorldSpec(t config.TimedEvalConfig, serverGPUs int) fungible.WorldSpec {
	return fungible.WorldSpec{Cluster: t.Cluster, ServerGPUs: serverGPUs, Throughputs: t.Throughputs,
		Profiles: t.Profiles, Mapping: t.SynergyMap, MappingKey: "synergy_map"}
}
