package jobs

import (
	"fmt"
	"math"
	"slices"
)

// Gavel's simulator (stanford-futuredata/gavel c4fa400, scheduler/scheduler.py), as its code
// behaves, for fifo, max_min_fairness and max_min_fairness_perf. Each quirk kept on purpose is
// named where it is reproduced; docs/jobs.md lists them.
const (
	gavelResetInterval = 1920 // minimum_time_between_allocation_resets
	gavelMaxFailures   = 5    // MAX_FAILED_ATTEMPTS
)

// gavelTypes is the order _schedule_jobs_on_workers starts from before shuffling.
var gavelTypes = [NumGPUs]GPU{V100, P100, K80}

// gavelAlpha is Gavel's alphabetical order of type names (k80 < p100 < v100), the order of
// its FIFO's free-type list and of the LP's columns.
var gavelAlpha = [NumGPUs]GPU{K80, P100, V100}

type gavelJob struct {
	idx       int
	scale     int
	steps     int64 // total
	done      int64 // steps run so far
	arrival   float64
	weight    float64
	tput      [NumGPUs]float64
	timeSoFar [NumGPUs]float64 // _job_time_so_far
	prio      [NumGPUs]float64
	deficit   [NumGPUs]float64
	alloc     [NumGPUs]float64
	inAlloc   bool
	failures  int
	scheduled int // the schedule pass that last took it
	size      int // its list in bySize
}

type gavelRun struct {
	job    *gavelJob
	gpu    GPU
	steps  int64
	finish float64
	jobs   int // jobs in the system when the round was scheduled (finish-time fairness's N)
}

type gavelSim struct {
	cfg        Config
	policy     string
	round      float64
	types      []GPU // registered types (count > 0), in gavelTypes order
	active     []*gavelJob
	byIdx      []*gavelJob      // by job index: the active job, nil before its arrival and after it ends
	workTime   [NumGPUs]float64 // _worker_time_so_far
	busy       float64          // sum of _cumulative_worker_time_so_far
	fifo       *gavelFIFO
	lp         maxMinLP
	shuffler   *pyRandom
	now        float64
	lastReset  float64
	needUpdate bool
	stamp      int
	bySize     []sizeList // one type's list, by job size (ascending; one per size in the trace)
	order      []GPU      // this round's type order
	picks      []gavelPick
}

func runGavel(tr *Trace, tputs [][NumGPUs]float64, cfg Config, policy string) (Result, error) {
	switch policy {
	case "fifo", "max_min_fairness", "max_min_fairness_perf":
	default:
		return Result{}, fmt.Errorf("policy %q has no Gavel-compatible mode (fifo, max_min_fairness, max_min_fairness_perf)", policy)
	}
	s := &gavelSim{cfg: cfg, policy: policy, round: cfg.Round, shuffler: newPyRandom(cfg.Seed + 5), needUpdate: true}
	for _, g := range gavelTypes {
		if cfg.Cluster.GPUs[g] > 0 {
			s.types = append(s.types, g)
		}
	}
	if policy == "fifo" {
		s.fifo = &gavelFIFO{rng: newPyRandom(cfg.Seed), gpu: make([]GPU, len(tr.Jobs))}
		for i := range s.fifo.gpu {
			s.fifo.gpu[i] = noGPU
		}
	}
	s.byIdx = make([]*gavelJob, len(tr.Jobs))
	sizeOf := s.sizes(tr)
	res := Result{JCT: map[int]float64{}}
	w := cfg.Window
	remaining := w[1] - w[0]
	fair := newFairShare(cfg.Cluster, len(tr.Jobs))
	log := newJobLog(cfg.Log)
	run := map[int]GPU{}
	var running []gavelRun
	var done []completion
	next := 0
	s.now = tr.Jobs[0].Arrival
	roundStart, roundEnd, haveRoundEnd := 0.0, 0.0, false
	windowStart := 0.0
	idle := 0
	for remaining > 0 {
		if len(running) > 0 {
			maxFinish := 0.0
			for _, r := range running {
				maxFinish = math.Max(maxFinish, r.finish)
			}
			// Quirk "stale round start": the round's start is the previous round's end, even
			// when the cluster sat idle between them.
			if haveRoundEnd {
				roundStart = roundEnd
			}
			roundEnd, haveRoundEnd = maxFinish, true
			s.now = maxFinish
		} else if next < len(tr.Jobs) {
			// Nothing runs: jump to the next arrival (Gavel's loop without a window does; with
			// one, its loop never gets here on the reference runs).
			s.now = math.Max(s.now, tr.Jobs[next].Arrival)
		} else {
			// Nothing runs and nothing arrives: Gavel forces an allocation reset.
			s.lastReset = 0
		}
		// Completions in heap order: latest finish first, then job id.
		done = completionOrder(running, done)
		for _, d := range done {
			r := running[d.pos]
			j := r.job
			exec := r.finish - roundStart
			// A multi-GPU job's steps are split per worker (steps//scale each, the rest on the
			// last); a worker with no step fails the round (Gavel's micro-task failure).
			if exec <= 0 || r.steps <= 0 || (j.scale > 1 && r.steps/int64(j.scale) == 0) {
				j.failures++
				s.needUpdate = true
				if j.failures >= gavelMaxFailures {
					log.fail(j.idx, s.now, fmt.Sprintf("%d failed rounds in a row", gavelMaxFailures))
					s.remove(j)
					if j.idx >= w[0] && j.idx < w[1] {
						res.Dropped = append(res.Dropped, j.idx)
						remaining--
					}
				}
				continue
			}
			j.failures = 0
			j.done += r.steps
			fair.ran(j.idx, j.tput, j.scale, float64(r.steps), r.jobs)
			j.timeSoFar[r.gpu] += exec
			s.workTime[r.gpu] += exec
			s.busy += exec * float64(j.scale)
			if j.done >= j.steps {
				log.complete(j.idx, r.finish)
				s.remove(j)
				if j.idx >= w[0] && j.idx < w[1] {
					res.JCT[j.idx] = r.finish - j.arrival
					remaining--
				}
			}
		}
		running = running[:0]
		if remaining == 0 {
			break
		}
		for next < len(tr.Jobs) && tr.Jobs[next].Arrival <= s.now {
			tj := tr.Jobs[next]
			j := &gavelJob{idx: tj.Index, scale: tj.Type.Scale, steps: tj.Steps, arrival: tj.Arrival, weight: tj.PriorityWeight, tput: tputs[next], size: sizeOf[tj.Type.Scale]}
			for _, g := range s.types {
				j.timeSoFar[g] = s.round / 2
			}
			s.active = append(s.active, j)
			s.byIdx[j.idx] = j
			log.arrive(tj, tputs[next], cfg.Cluster)
			s.needUpdate = true
			if tj.Index == w[0] {
				windowStart = s.now
			}
			next++
		}
		for _, sch := range s.schedule() {
			j := sch.job
			steps := min(int64(j.tput[sch.gpu]*s.round), j.steps-j.done)
			running = append(running, gavelRun{job: j, gpu: sch.gpu, steps: steps, finish: s.now + float64(steps)/j.tput[sch.gpu], jobs: len(s.active)})
		}
		if log != nil {
			clear(run)
			for _, r := range running {
				run[r.job.idx] = r.gpu
			}
			log.boundary(s.now, run)
		}
		res.Rounds++
		// With nothing to run and nothing left to arrive, one forced reset must get work going;
		// Gavel would loop forever otherwise.
		if len(running) > 0 || next < len(tr.Jobs) {
			idle = 0
		} else if idle++; idle > 2 {
			return res, fmt.Errorf("gavel compat: %d jobs left that no round can run", len(s.active))
		}
	}
	res.Makespan = s.now
	res.WindowSpan = s.now - windowStart
	if s.now > 0 {
		res.Utilization = s.busy / float64(cfg.Cluster.Total()) / s.now
	}
	res.summarise(w)
	fair.rho(&res, w)
	return res, log.close()
}

// completion is a run's place in running with its heap keys.
type completion struct {
	finish   float64
	idx, pos int
}

// completionOrder is running's order in Gavel's completion heap, latest finish first, then job
// id, into done: an insertion sort of small keys (a round runs a few dozen jobs; sorting the
// runs themselves through a comparator took a fifth of a run).
func completionOrder(running []gavelRun, done []completion) []completion {
	done = done[:0]
	for k, r := range running {
		c := completion{r.finish, r.job.idx, k}
		i := len(done)
		done = append(done, c)
		for ; i > 0 && (done[i-1].finish < c.finish || (done[i-1].finish == c.finish && done[i-1].idx > c.idx)); i-- {
			done[i] = done[i-1]
		}
		done[i] = c
	}
	return done
}

func (s *gavelSim) remove(j *gavelJob) {
	s.active = slices.DeleteFunc(s.active, func(x *gavelJob) bool { return x == j })
	s.byIdx[j.idx] = nil
	s.needUpdate = true
}

// gavelEntry is a job on one type's priority list, with its sort keys; pos is its place in
// the active list (no pointer: the heaps move entries without write barriers).
type gavelEntry struct {
	prio, deficit, alloc float64
	pos                  int
}

// before is the order of a type's list: priority, deficit, allocation (descending), then
// position in the active list.
func (x gavelEntry) before(y gavelEntry) bool {
	if x.prio != y.prio {
		return x.prio > y.prio
	}
	if x.deficit != y.deficit {
		return x.deficit > y.deficit
	}
	if x.alloc != y.alloc {
		return x.alloc > y.alloc
	}
	return x.pos < y.pos
}

// sizeList is a type's list of jobs of one size: the best keep of them, best first (a walk
// down the type takes at most keep jobs of this size), and the next one to take.
type sizeList struct {
	scale      int
	keep, next int
	best       []gavelEntry
}

// offer adds e to the list if it is among the keep best so far: usually one comparison with
// the last kept.
func (b *sizeList) offer(e gavelEntry) {
	n := len(b.best)
	if n == b.keep {
		if !e.before(b.best[n-1]) {
			return
		}
		n--
	} else {
		b.best = append(b.best, e)
	}
	for ; n > 0 && e.before(b.best[n-1]); n-- {
		b.best[n] = b.best[n-1]
	}
	b.best[n] = e
}

// sizes makes one list per job size of the trace, in ascending order, and returns each
// size's position.
func (s *gavelSim) sizes(tr *Trace) map[int]int {
	var scales []int
	for _, j := range tr.Jobs {
		scales = append(scales, j.Type.Scale)
	}
	slices.Sort(scales)
	pos := map[int]int{}
	for _, sc := range slices.Compact(scales) {
		pos[sc] = len(s.bySize)
		s.bySize = append(s.bySize, sizeList{scale: sc})
	}
	return pos
}

type gavelPick struct {
	job *gavelJob
	gpu GPU
}

// schedule is _schedule_jobs_on_workers: priorities, the (shuffled) type order, then a greedy
// pass down each type's priority list.
func (s *gavelSim) schedule() []gavelPick {
	s.updatePriorities()
	order := append(s.order[:0], s.types...)
	s.order = order
	if s.policy != "max_min_fairness_perf" {
		shuffle(s.shuffler, order)
	}
	fifo := s.fifo != nil
	left := s.cfg.Cluster.GPUs
	s.stamp++
	picks := s.picks[:0]
	for _, g := range order {
		// Gavel sorts each type's list (a stable sort) and walks it, taking each job that
		// fits, until the type is full. A job skipped for its size never fits later (free GPUs
		// only shrink), so the walk takes, each time, the best job among those of a size that
		// still fits: here one list per size on copied keys (the position in the active list
		// breaks ties: the stable order), of the best jobs as many as the type's free GPUs
		// hold at that size, without jobs the walk would skip whatever their rank (taken on an
		// earlier type, no throughput here, FIFO's zero priorities).
		for k := range s.bySize {
			b := &s.bySize[k]
			b.best, b.keep, b.next = b.best[:0], left[g]/b.scale, 0
		}
		for pos, j := range s.active {
			if (fifo && j.prio[g] <= 0) || j.scheduled == s.stamp || j.tput[g] <= 0 || j.scale > left[g] {
				continue
			}
			s.bySize[j.size].offer(gavelEntry{j.prio[g], j.deficit[g], j.allocOn(g), pos})
		}
		for {
			best := -1
			for k := range s.bySize {
				b := &s.bySize[k]
				if b.next < len(b.best) && b.scale <= left[g] && (best < 0 || b.best[b.next].before(s.bySize[best].best[s.bySize[best].next])) {
					best = k
				}
			}
			if best < 0 {
				break
			}
			b := &s.bySize[best]
			j := s.active[b.best[b.next].pos]
			b.next++
			left[g] -= j.scale
			j.scheduled = s.stamp
			// A job not in the allocation yet (arrived since the last recompute) takes its
			// workers in this pass but is then not dispatched, as in Gavel.
			if j.inAlloc {
				picks = append(picks, gavelPick{j, g})
			}
		}
	}
	s.picks = picks
	return picks
}

func (j *gavelJob) allocOn(g GPU) float64 {
	if !j.inAlloc {
		return 0
	}
	return j.alloc[g]
}

// updatePriorities is _update_priorities in simulation: reset the time run so far and
// recompute the allocation when something changed and 1,920 s have passed since the last
// reset (or the last reset was at time 0), then priority = allocation / share of time received.
func (s *gavelSim) updatePriorities() {
	if s.needUpdate && (s.now-s.lastReset >= gavelResetInterval || s.lastReset == 0) {
		s.resetTimeRunSoFar()
		s.computeAllocation()
		s.needUpdate = false
	}
	for _, g := range s.types {
		for _, j := range s.active {
			a := j.alloc[g]
			if !j.inAlloc || a == 0 || j.tput[g] == 0 {
				j.prio[g] = 0
				continue
			}
			frac := 0.0
			if s.workTime[g] != 0 {
				frac = j.timeSoFar[g] / s.workTime[g]
			}
			if frac > 0 {
				j.prio[g] = a / frac
			} else {
				j.prio[g] = a * 1e9
			}
		}
	}
}

// resetTimeRunSoFar is _reset_time_run_so_far: deficits grow by the time each job should have
// had under the old allocation minus what it got; times restart at half a round.
func (s *gavelSim) resetTimeRunSoFar() {
	elapsed := s.now - s.lastReset
	half := s.round / 2
	for _, g := range s.types {
		s.workTime[g] = 0
		for _, j := range s.active {
			should := 0.0
			if j.inAlloc {
				should = j.alloc[g] * elapsed
			}
			j.deficit[g] += should - (j.timeSoFar[g] - half)
			j.timeSoFar[g] = half
			s.workTime[g] += half
		}
	}
	s.lastReset = s.now
}

func (s *gavelSim) computeAllocation() {
	for _, j := range s.active {
		j.inAlloc, j.alloc = true, [NumGPUs]float64{}
	}
	if s.policy == "fifo" {
		s.fifo.allocate(s)
		return
	}
	if len(s.active) == 0 {
		return
	}
	s.lp.setup(s.types, s.cfg.Cluster, s.policy == "max_min_fairness_perf", len(s.active), func(i int) ([NumGPUs]float64, int, float64) {
		j := s.active[i]
		return j.tput, j.scale, j.weight
	})
	x, _ := s.lp.solve()
	for i, j := range s.active {
		for k, g := range s.types {
			j.alloc[g] = x[i][k]
		}
	}
}

// gavelFIFO is Gavel's FIFOPolicy in its base mode, state and quirks included.
type gavelFIFO struct {
	rng  *pyRandom
	gpu  []GPU // by job index: its type (noGPU: none), kept across recomputes
	held []int // the job indices with a type, ascending
	next []int
}

// noGPU marks a job FIFO has given no type.
const noGPU GPU = -1

func (f *gavelFIFO) allocate(s *gavelSim) {
	var avail [NumGPUs]int
	for _, g := range s.types {
		avail[g] = s.cfg.Cluster.GPUs[g]
	}
	var queue []*gavelJob
	for _, j := range s.active {
		if f.gpu[j.idx] == noGPU {
			queue = append(queue, j)
		}
	}
	// A finished job's type goes to the queue's head if it fits there (before the later
	// allocated jobs are subtracted from the free count).
	next := f.next[:0]
	for _, idx := range f.held {
		g := f.gpu[idx]
		if j := s.byIdx[idx]; j != nil {
			avail[g] -= j.scale
			next = append(next, idx)
			continue
		}
		if len(queue) > 0 && queue[0].scale <= avail[g] && queue[0].tput[g] > 0 {
			f.gpu[queue[0].idx] = g
			next = append(next, queue[0].idx)
			avail[g] -= queue[0].scale
			queue = queue[1:]
		}
		f.gpu[idx] = noGPU
	}
	var free []GPU
	for _, g := range gavelAlpha {
		if avail[g] > 0 && s.cfg.Cluster.GPUs[g] > 0 {
			free = append(free, g)
		}
	}
	for len(queue) > 0 && len(free) > 0 {
		j := queue[0]
		queue = queue[1:]
		var fitting []int
		for i, g := range free {
			if avail[g] >= j.scale {
				fitting = append(fitting, i)
			}
		}
		if len(fitting) == 0 {
			break
		}
		pick := fitting[f.rng.randrange(len(fitting))]
		// Quirk "last free type": the random draw only decides which type leaves the free
		// list; the job gets the alphabetically last type still on it, whatever its count.
		g := free[len(free)-1]
		if j.tput[g] > 0 {
			f.gpu[j.idx] = g
			next = append(next, j.idx)
			avail[g] -= j.scale
			if avail[g] == 0 {
				free = slices.Delete(free, pick, pick+1)
			}
		}
	}
	slices.Sort(next)
	f.held, f.next = next, f.held
	for _, idx := range f.held {
		s.byIdx[idx].alloc[f.gpu[idx]] = 1
	}
}
