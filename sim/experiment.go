package sim

import (
	"bufio"
	"context"
	"fmt"
	"io"

	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/schedrl/schedrl/internal/atomicfile"
)

// Experiment is one arrival-protocol setting: a node list, a pod list, tuning ratio, seed and
// the typical-shape coverage of the fragment measure.
type Experiment struct {
	NodesPath, PodsPath string
	Tune                float64
	Seed                uint64
	Coverage            float64
}

// Prepared is an experiment's loaded inputs.
type Prepared struct {
	Experiment
	Nodes    []Node
	Trace    []Task
	Model    *FragModel
	Workload []Task
}

// Prepare loads the traces, derives the typical shapes from the trace (before tuning, as the
// paper does) and samples the seeded workload.
func Prepare(e Experiment) (*Prepared, error) {
	nodes, err := LoadNodes(e.NodesPath)
	if err != nil {
		return nil, err
	}
	trace, err := LoadTasks(e.PodsPath)
	if err != nil {
		return nil, err
	}
	model, err := TypicalShapes(trace, e.Coverage)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", e.PodsPath, err)
	}
	var gpuCap int64
	for _, n := range nodes {
		gpuCap += int64(n.GPUs) * MilliPerGPU
	}
	if gpuCap == 0 {
		return nil, fmt.Errorf("%s: no node has a GPU (%d nodes, all CPU-only); the arrival protocol needs GPU capacity", e.NodesPath, len(nodes))
	}
	work, err := TuneWorkload(trace, gpuCap, e.Tune, RNG(e.Seed, StreamWorkload))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", e.PodsPath, err)
	}
	return &Prepared{Experiment: e, Nodes: nodes, Trace: trace, Model: model, Workload: work}, nil
}

// NewCluster builds the experiment's empty cluster with its seeded tie-break node order.
func (p *Prepared) NewCluster() (*Cluster, error) {
	c, err := NewCluster(p.Nodes, p.Model)
	if err != nil {
		return nil, err
	}
	return c, c.SetTieOrder(SeededTieOrder(len(p.Nodes), p.Seed))
}

// Run places the workload on a fresh cluster with placer, logging to log when not nil. The
// policy's random draws use the experiment seed's policy stream.
func (p *Prepared) Run(placer Placer, log *LogWriter) (*Cluster, RunResult, error) {
	c, err := p.NewCluster()
	if err != nil {
		return nil, RunResult{}, err
	}
	res, err := RunArrivals(c, p.Workload, placer, RNG(p.Seed, StreamPolicy), log)
	return c, res, err
}

// LogMeta is the header metadata of an experiment run's decision log.
func (p *Prepared) LogMeta(policy string) map[string]string {
	return map[string]string{"policy": policy, "seed": strconv.FormatUint(p.Seed, 10),
		"nodes": p.NodesPath, "pods": p.PodsPath, "tune": strconv.FormatFloat(p.Tune, 'g', -1, 64),
		"protocol": "fgd-atc23-arrival"}
}

// RunLogged runs the experiment writing its decision log atomically to logPath ("" for none).
func (p *Prepared) RunLogged(ctx context.Context, placer Placer, logPath string) (RunResult, error) {
	if logPath == "" {
		_, res, err := p.Run(placer, nil)
		return res, err
	}
	f, err := atomicfile.Create(logPath, 0o644)
	if err != nil {
		return RunResult{}, err
	}
	defer f.Abort()
	c, err := p.NewCluster()
	if err != nil {
		return RunResult{}, err
	}
	lw, err := NewLogWriter(ctxWriter{ctx, f}, NewLogHeader(c, p.LogMeta(placer.Name())))
	if err != nil {
		return RunResult{}, err
	}
	res, err := RunArrivals(c, p.Workload, placer, RNG(p.Seed, StreamPolicy), lw)
	if err != nil {
		return res, err
	}
	if err := lw.Flush(); err != nil {
		return res, err
	}
	return res, f.Commit()
}

// ctxWriter fails once ctx is done, so a cancelled run stops at its next buffered write and
// its temporary log is aborted.
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c ctxWriter) Write(b []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.w.Write(b)
}

// WriteCurve writes the curve CSV (arrived_pct,alloc_gpu_pct,frag_gpu,frag_ratio_pct).
func WriteCurve(w io.Writer, curve []CurvePoint) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, "arrived_pct,alloc_gpu_pct,frag_gpu,frag_ratio_pct")
	for _, p := range curve {
		fmt.Fprintf(bw, "%d,%.2f,%.2f,%.2f\n", p.ArrivedPct, p.AllocGPUPct, p.FragGPU, p.FragRatioPct)
	}
	return bw.Flush()
}

// WriteCurveFile writes the curve CSV atomically.
func WriteCurveFile(path string, curve []CurvePoint) error {
	f, err := atomicfile.Create(path, 0o644)
	if err != nil {
		return err
	}
	defer f.Abort()
	if err := WriteCurve(f, curve); err != nil {
		return err
	}
	return f.Commit()
}

// Job is one run of a batch: an experiment and where its log goes ("" for none).
type Job struct {
	Experiment
	LogPath string
}

// JobResult is a finished batch job.
type JobResult struct {
	Job
	Result      RunResult
	WallSeconds float64
	Err         error
}

// RunBatch runs jobs on up to workers goroutines (0: one per CPU), each with its own placer
// from newPlacer; results come back in job order. Once ctx is done, logged runs stop at their
// next write and jobs not started get ctx's error.
func RunBatch(ctx context.Context, jobs []Job, newPlacer func() (Placer, error), workers int) []JobResult {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	out := make([]JobResult, len(jobs))
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < min(workers, len(jobs)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				start := time.Now()
				out[i] = JobResult{Job: jobs[i]}
				if err := ctx.Err(); err != nil {
					out[i].Err = err
					continue
				}
				placer, err := newPlacer()
				if err == nil {
					var p *Prepared
					if p, err = Prepare(jobs[i].Experiment); err == nil {
						out[i].Result, err = p.RunLogged(ctx, placer, jobs[i].LogPath)
					}
				}
				out[i].Err, out[i].WallSeconds = err, time.Since(start).Seconds()
			}
		}()
	}
	for i := range jobs {
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}
