package eval

import (
	"fmt"

	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/sim"
	"github.com/schedrl/schedrl/tasks"
)

func init() { registerTimedKind("tasks", tasksKind{}) }

// tasksKind is the openb timed-task world (package tasks): pod lists (eval.traces, as in the
// arrival protocol) on eval.nodes, resampled as a Poisson process at timed.load (0: the trace's
// timestamps) with run times capped at timed.cap, queued by timed.queue. Policies are placers,
// resolved like the arrival protocol's (heuristics, checkpoints, registry references).
type tasksKind struct{}

type tasksWorld struct {
	cfg      config.TimedEvalConfig
	nodes    []sim.Node
	capMilli int64
	policies []PolicyFactory
	names    []string
	models   []*sim.FragModel
	work     [][]*tasks.Workload // [workload][seed], read-only
	seeds    []uint64
}

func (tasksKind) workloadName(raw, tracesDir string) (string, error) {
	ref, err := ParseTraceRef(raw, tracesDir)
	return ref.Name, err
}

func (tasksKind) prepare(cfg config.EvalConfig, seeds []uint64, opts Options) (timedWorld, error) {
	t := cfg.Timed
	if _, err := tasks.NewQueue(t.Queue); err != nil {
		return nil, fmt.Errorf("timed.queue: %w", err)
	}
	nodes, err := sim.LoadNodes(cfg.Nodes)
	if err != nil {
		return nil, fmt.Errorf("nodes %q: %w", cfg.Nodes, err)
	}
	w := &tasksWorld{cfg: t, nodes: nodes, seeds: seeds}
	for _, n := range nodes {
		w.capMilli += int64(n.GPUs) * sim.MilliPerGPU
	}
	var refs []PolicyRef
	for _, s := range cfg.Policies {
		ref, err := ParsePolicyRef(s)
		if err != nil {
			return nil, err
		}
		if ref.Kind == Checkpoint {
			if err := fileExists(fmt.Sprintf("policy %q: checkpoint", ref.Raw), ref.Dir); err != nil {
				return nil, err
			}
		}
		refs = append(refs, ref)
	}
	pods, err := loadPodLists(cfg)
	if err != nil {
		return nil, err
	}
	for i, p := range pods {
		ref, trace := p.ref, p.tasks
		perSeed := make([]*tasks.Workload, len(seeds))
		for k, seed := range seeds {
			wc := tasks.WorkloadConfig{Load: t.Load, Seed: seed, Cap: t.Cap, Count: t.Tasks}
			if perSeed[k], err = tasks.NewWorkload(trace, w.capMilli, wc); err != nil {
				return nil, fmt.Errorf("traces[%d] %s seed %d: %w", i, ref.Path, seed, err)
			}
			if arr := perSeed[k].Arrivals; t.Warmup > 0 && t.Warmup >= arr[len(arr)-1].Time {
				return nil, fmt.Errorf("timed.warmup: %g s is not before the last arrival (%g s) of traces[%d] seed %d: nothing would be measured",
					t.Warmup, arr[len(arr)-1].Time, i, seed)
			}
		}
		w.names, w.models, w.work = append(w.names, ref.Name), append(w.models, p.model), append(w.work, perSeed)
	}
	// Last, since resolving may load networks or pull from the registry.
	for _, ref := range refs {
		f, err := opts.Resolve(ref)
		if err != nil {
			return nil, err
		}
		w.policies = append(w.policies, f)
	}
	return w, nil
}

// podList is one eval.traces entry of the openb timed worlds: its reference, tasks and
// typical shapes.
type podList struct {
	ref   TraceRef
	tasks []sim.Task
	model *sim.FragModel
}

// loadPodLists reads every eval.traces pod list; errors name the entry.
func loadPodLists(cfg config.EvalConfig) ([]podList, error) {
	var out []podList
	for i, s := range cfg.Traces {
		ref, err := ParseTraceRef(s, cfg.TracesDir)
		if err != nil {
			return nil, fmt.Errorf("traces[%d]: %w", i, err)
		}
		trace, err := sim.LoadTasks(ref.Path)
		if err != nil {
			return nil, fmt.Errorf("traces[%d]: %w", i, err)
		}
		model, err := sim.TypicalShapes(trace, typicalCoverage)
		if err != nil {
			return nil, fmt.Errorf("traces[%d] %s: %w", i, ref.Path, err)
		}
		out = append(out, podList{ref, trace, model})
	}
	return out, nil
}

func (w *tasksWorld) workloads() []string { return w.names }

// seeded is always true: the seed draws the Poisson arrivals and the tie order.
func (w *tasksWorld) seeded(int) bool { return true }

func (w *tasksWorld) describe() string {
	return fmt.Sprintf("%d nodes, %d GPUs; offered load %g, run times capped at %g s, queue %s, warm-up %g s",
		len(w.nodes), w.capMilli/sim.MilliPerGPU, w.cfg.Load, w.cfg.Cap, w.cfg.Queue, w.cfg.Warmup)
}

// run measures the tasks arrived after the warm-up (tasksSeedRun).
func (w *tasksWorld) run(policy, workload, seed int) (TimedSeedRun, error) {
	placer, err := w.policies[policy]()
	if err != nil {
		return TimedSeedRun{}, err
	}
	queue, err := tasks.NewQueue(w.cfg.Queue)
	if err != nil {
		return TimedSeedRun{}, err
	}
	c, err := sim.NewCluster(w.nodes, w.models[workload])
	if err != nil {
		return TimedSeedRun{}, err
	}
	if err := c.SetTieOrder(sim.SeededTieOrder(len(w.nodes), w.seeds[seed])); err != nil {
		return TimedSeedRun{}, err
	}
	work := w.work[workload][seed]
	res, err := tasks.Run(c, placer, queue, work.Arrivals, tasks.Config{Warmup: w.cfg.Warmup, SeriesStep: w.cfg.SeriesStep, Seed: w.seeds[seed]}, nil)
	if err != nil {
		return TimedSeedRun{}, err
	}
	return tasksSeedRun(res), nil
}

// tasksSeedRun is a timed-task run's report: the measured tasks' completion times and
// queueing delays by kind (whole-gpu: the tasks asking for one or more whole GPUs), the
// allocation mean over [warm-up, last arrival] and the queue length, the mean of the series'
// samples there.
func tasksSeedRun(res *tasks.Result) TimedSeedRun {
	run := TimedSeedRun{Makespan: res.Makespan, Utilization: res.Utilization, AllocGPUMeanPct: res.AllocGPUMeanPct,
		QueueDelay: map[string]float64{}}
	for _, i := range res.Measured() {
		run.JCT = append(run.JCT, res.CompletionTime(i))
	}
	jct := res.Completion()
	run.Jobs, run.AvgJCT, run.P50JCT, run.P95JCT, run.P99JCT = jct.Tasks, jct.Mean, jct.P50, jct.P95, jct.P99
	for k, d := range res.Delays() {
		run.QueueDelay[k] = d.Mean
	}
	run.QueueDelay[WholeGPUDelay] = res.DelayStats(tasks.WholeGPU).Mean
	n := 0
	for _, p := range res.Series {
		run.Series = append(run.Series, TimedPoint{Time: p.Time, AllocGPUPct: p.AllocGPUPct, Running: p.Running, Waiting: p.Waiting})
		if p.Time >= res.Warmup && p.Time <= res.LastArrival {
			run.QueueLenMean += float64(p.Waiting)
			n++
		}
	}
	if n > 0 {
		run.QueueLenMean /= float64(n)
	}
	return run
}

// WholeGPUDelay is the QueueDelay key of the tasks that ask for whole GPUs (one or more), the
// tasks fragmentation makes wait; the gate reads it as queue_delay_whole-gpu_mean_s.
const WholeGPUDelay = "whole-gpu"
