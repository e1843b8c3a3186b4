package fungible

import (
	"fmt"
	"math"
	"slices"
)

func init() { registerPolicy("sia", func() RoundPolicy { return NewSia(DefaultSiaOptions()) }) }

// SiaOptions are the weights of Sia's objective (Jayaram Subramanya et al., SOSP'23, and its
// artifact's sia_fix policy, whose defaults these are).
type SiaOptions struct {
	// P is the power each normalised throughput is raised to (p_fairness): below 1 a GPU added
	// to a job that has few counts for more than one added to a job that has many.
	P float64
	// RestartPenalty is the seconds a restart costs a job (restart_penalty): a configuration other
	// than last round's is worth max(age − restarts·R, 0) / (age + R) of its value.
	RestartPenalty float64
	// NoAlloc is what leaving a job without GPUs costs the objective (−lambda_n).
	NoAlloc float64
}

// DefaultSiaOptions are sia_fix's: p 0.5, a 30 s restart, 1 per job left out.
func DefaultSiaOptions() SiaOptions { return SiaOptions{P: 0.5, RestartPenalty: 30, NoAlloc: 1} }

// Sia is a Sia-style optimiser in the fungible world: each round it chooses every present job's
// GPU type and count among the counts Gavel's table measures for the job's model (1, 2, 4, 8),
// to maximise Σ_j (speed_j(c)/min_c speed_j)^P × restart factor + NoAlloc × (jobs allocated),
// with at most the cluster's GPUs of each type. Speeds are whole-job throughputs at the type's
// fair share of CPUs and memory (Synergy's factor there), so the GPU count of each type is the only
// constraint and the placer always places what the solve chose. The integer program is solved
// greedily (sia_fix solves it with GLPK's MILP): the move of one job to another configuration with
// the best gain per GPU it adds, until no move gains; the gap to the exact optimum on small rounds
// is measured in TestSiaGreedyGap. A policy instance counts each job's restarts: one per run.
type Sia struct {
	opt      SiaOptions
	restarts map[int]int
}

// NewSia is a fresh optimiser with the given weights.
func NewSia(opt SiaOptions) *Sia { return &Sia{opt: opt, restarts: map[int]int{}} }

// siaConfig is one configuration of a job: gpus GPUs of GPUTypes[typ] and its value.
type siaConfig struct {
	typ, gpus int
	value     float64
}

// Plan chooses the round's configurations and places them, the largest first (as Sia's
// alloc_to_placement), on top of l.
func (s *Sia) Plan(l *Ledger, m SpeedModel, st RoundState) (Plan, error) {
	c := l.Cluster()
	free := make([]int, len(GPUTypes))
	for _, srv := range c {
		if k := slices.Index(GPUTypes, srv.GPUType); k >= 0 {
			free[k] += srv.GPUs
		}
	}
	for _, id := range l.Jobs() {
		a, _ := l.Get(id)
		free[slices.Index(GPUTypes, a.GPUType)] -= a.GPUCount()
	}
	configs := make([][]siaConfig, len(st.Present))
	for i, js := range st.Present {
		cs, err := s.configs(c, m, js, st.Now)
		if err != nil {
			return Plan{}, err
		}
		configs[i] = cs
	}
	chosen := SiaSolve(configs, free)
	order := make([]int, 0, len(chosen))
	for i, k := range chosen {
		if k >= 0 {
			order = append(order, i)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return configs[b][chosen[b]].gpus - configs[a][chosen[a]].gpus })
	pl := NewPlacer(l, m)
	for _, i := range order {
		js, cfg := st.Present[i], configs[i][chosen[i]]
		t := GPUTypes[cfg.typ]
		fc, fm := c.FairShare(t)
		ok, err := pl.Start(js.Job, t, cfg.gpus, fc, fm)
		if err != nil {
			return Plan{}, err
		}
		if ok && js.Held && (js.Prev.GPUType != t || js.Prev.GPUCount() != cfg.gpus) {
			s.restarts[js.ID]++
		}
	}
	return pl.Plan(), nil
}

// configs are a job's configurations with their values: every GPU type and count with a measured
// throughput, a count dropped when a smaller one on the same type is as fast (it only holds GPUs).
func (s *Sia) configs(c Cluster, m SpeedModel, js JobStatus, now float64) ([]siaConfig, error) {
	prof, err := m.Sens.Profile(js.Type)
	if err != nil {
		return nil, err
	}
	var out []siaConfig
	var speeds []float64
	for k, t := range GPUTypes {
		fc, fm := c.FairShare(t)
		if fc == 0 {
			continue // the cluster has no server of this type
		}
		f, err := prof.Factor(fc, fm)
		if err != nil {
			return nil, err
		}
		best := 0.0
		for _, g := range []int{1, 2, 4, 8} {
			v, ok := m.Tput.Alone(t, js.Type, g)
			if !ok || v*f <= best {
				continue
			}
			best = v * f
			out = append(out, siaConfig{typ: k, gpus: g})
			speeds = append(speeds, v*f)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("job %d: no throughput for %q on any GPU type and count of the cluster", js.ID, js.Type)
	}
	low := slices.Min(speeds)
	age := now - js.Arrival
	restart := max(age-float64(s.restarts[js.ID])*s.opt.RestartPenalty, 0) / (age + s.opt.RestartPenalty)
	for i := range out {
		v := math.Pow(speeds[i]/low, s.opt.P)
		if js.Held && (GPUTypes[out[i].typ] != js.Prev.GPUType || out[i].gpus != js.Prev.GPUCount()) {
			v *= restart
		}
		out[i].value = v + s.opt.NoAlloc
	}
	return out, nil
}

// SiaSolve chooses at most one configuration per job (its index in configs[j], −1 for none) with
// at most free[t] GPUs of each type t, greedily: from nothing, repeatedly the move of one job to
// another configuration that fits with the highest gain per GPU added (a move that adds none and
// gains goes first, the largest gain first; ties to the lower job, then configuration), until no
// move gains; then the same by the highest gain, and the better of the two. Every move raises
// the objective, so each pass ends.
func SiaSolve(configs [][]siaConfig, free []int) []int {
	perGPU, whole := siaGreedy(configs, free, true), siaGreedy(configs, free, false)
	if siaObjective(configs, whole) > siaObjective(configs, perGPU) {
		return whole
	}
	return perGPU
}

func siaObjective(configs [][]siaConfig, chosen []int) float64 {
	v := 0.0
	for j, k := range chosen {
		if k >= 0 {
			v += configs[j][k].value
		}
	}
	return v
}

// siaGreedy is one greedy pass: moves ranked by gain per GPU added (perGPU) or by gain.
func siaGreedy(configs [][]siaConfig, free []int, perGPU bool) []int {
	free = slices.Clone(free)
	chosen := make([]int, len(configs))
	for j := range chosen {
		chosen[j] = -1
	}
	for {
		bestJ, bestK, bestRatio, bestFree := -1, -1, 0.0, false
		for j, cs := range configs {
			curV, curG, curT := 0.0, 0, -1
			if k := chosen[j]; k >= 0 {
				curV, curG, curT = cs[k].value, cs[k].gpus, cs[k].typ
			}
			for k, c := range cs {
				gain := c.value - curV
				if k == chosen[j] || gain <= 1e-12 {
					continue
				}
				room := free[c.typ]
				if c.typ == curT {
					room += curG
				}
				if room < c.gpus {
					continue
				}
				added := c.gpus - curG
				isFree := added <= 0
				ratio := gain
				if !isFree && perGPU {
					ratio = gain / float64(added)
				}
				if bestJ < 0 || isFree && !bestFree || isFree == bestFree && ratio > bestRatio {
					bestJ, bestK, bestRatio, bestFree = j, k, ratio, isFree
				}
			}
		}
		if bestJ < 0 {
			return chosen
		}
		if k := chosen[bestJ]; k >= 0 {
			free[configs[bestJ][k].typ] += configs[bestJ][k].gpus
		}
		free[configs[bestJ][bestK].typ] -= configs[bestJ][bestK].gpus
		chosen[bestJ] = bestK
	}
}
