package jobs

import (
	"math"
	"slices"
	"sort"
)

// runRounds is schedrl's own round model: rounds of fixed length starting at the first
// arrival; at each boundary the jobs that have arrived are offered to the policy, GPUs are
// handed out down its priority list, and each chosen job runs the round (or finishes inside
// it, freeing its GPUs until the next boundary) at its type's throughput. A job not chosen is
// preempted. An empty cluster skips ahead to the next arrival.
func runRounds(tr *Trace, tputs [][NumGPUs]float64, cfg Config, name string) (Result, error) {
	pol := registry[name].new()
	res := Result{JCT: map[int]float64{}}
	w := cfg.Window
	remaining := w[1] - w[0]
	now, next := tr.Jobs[0].Arrival, 0
	var present []*JobState
	var prio [][NumGPUs]float64
	type pair struct {
		i int
		g GPU
	}
	var pairs []pair
	busy, end := 0.0, 0.0
	fair := newFairShare(cfg.Cluster, len(tr.Jobs))
	log := newJobLog(cfg.Log)
	run := map[int]GPU{}
	windowStart := 0.0
	for remaining > 0 {
		for next < len(tr.Jobs) && tr.Jobs[next].Arrival <= now {
			j := tr.Jobs[next]
			present = append(present, &JobState{Job: j, Throughput: tputs[next], LastRan: j.Arrival})
			log.arrive(j, tputs[next], cfg.Cluster)
			if j.Index == w[0] {
				windowStart = j.Arrival
			}
			next++
		}
		if len(present) == 0 {
			now = tr.Jobs[next].Arrival
			continue
		}
		round := &Round{Now: now, Length: cfg.Round, Cluster: cfg.Cluster, Jobs: present}
		prio = slices.Grow(prio[:0], len(present))[:len(present)]
		pol.Priorities(round, prio)
		pairs = pairs[:0]
		for i := range present {
			for g := range GPU(NumGPUs) {
				if prio[i][g] > 0 {
					pairs = append(pairs, pair{i, g})
				}
			}
		}
		sort.Slice(pairs, func(a, b int) bool {
			pa, pb := prio[pairs[a].i][pairs[a].g], prio[pairs[b].i][pairs[b].g]
			if pa != pb {
				return pa > pb
			}
			if pairs[a].i != pairs[b].i {
				return pairs[a].i < pairs[b].i
			}
			return pairs[a].g < pairs[b].g
		})
		left := cfg.Cluster.GPUs
		placed := make([]bool, len(present))
		gpuOf := make([]GPU, len(present))
		for _, p := range pairs {
			j := present[p.i]
			if placed[p.i] || left[p.g] < j.Type.Scale {
				continue
			}
			placed[p.i], gpuOf[p.i] = true, p.g
			left[p.g] -= j.Type.Scale
		}
		res.sample(now, present, placed)
		if log != nil {
			clear(run)
			for i, j := range present {
				if placed[i] {
					run[j.Index] = gpuOf[i]
				}
			}
			log.boundary(now, run)
		}
		finished := false
		for i, j := range present {
			j.Ran = placed[i]
			if !placed[i] {
				continue
			}
			g := gpuOf[i]
			need := j.Remaining() / j.Throughput[g]
			run := math.Min(need, cfg.Round)
			fair.ran(j.Index, j.Throughput, j.Type.Scale, math.Min(j.Remaining(), j.Throughput[g]*cfg.Round), len(present))
			j.Service[g] += run
			j.Attained += run * float64(j.Type.Scale)
			j.LastRan = now + run
			busy += run * float64(j.Type.Scale)
			if need <= cfg.Round {
				j.Done = float64(j.Steps)
				finish := now + need
				end = math.Max(end, finish)
				log.complete(j.Index, finish)
				if j.Index >= w[0] && j.Index < w[1] {
					res.JCT[j.Index] = finish - j.Arrival
					remaining--
				}
				finished = true
			} else {
				j.Done += j.Throughput[g] * cfg.Round
			}
		}
		if finished {
			present = slices.DeleteFunc(present, func(j *JobState) bool { return j.Remaining() <= 0 })
		}
		res.Rounds++
		now += cfg.Round
	}
	res.Makespan = end
	res.WindowSpan = end - windowStart
	res.Utilization = busy / float64(cfg.Cluster.Total()) / end
	res.summarise(w)
	fair.rho(&res, w)
	return res, log.close()
}
