package env

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/schedrl/schedrl/fungible"
)

// maifsCounts are the GPU counts Gavel's table measures (its scale factors).
var maifsCounts = []int{1, 2, 4, 8}

// pairKey is a pair of job types sharing gpus GPUs.
type pairKey struct {
	a, b string
	gpus int
}

// pairGain is the best measured co-location of a pair over the cluster's types: the type, both
// jobs' paired over alone speeds, and their sum (above 1: sharing beats taking turns).
type pairGain struct {
	gpuType     string
	self, other float64
}

func (g pairGain) sum() float64 { return g.self + g.other }

// pair measures a pair once per run (the table is fixed).
func (e *MAIFS) pair(a, b string, gpus int) pairGain {
	k := pairKey{a, b, gpus}
	if g, ok := e.pairs[k]; ok {
		return g
	}
	var best pairGain
	for _, t := range e.types {
		if !e.m.CanShare(t, a, b, gpus) {
			continue
		}
		self, other, _ := e.m.Tput.Paired(t, a, gpus, b, gpus)
		va, _ := e.m.Tput.Alone(t, a, gpus)
		vb, _ := e.m.Tput.Alone(t, b, gpus)
		if va <= 0 || vb <= 0 {
			continue
		}
		g := pairGain{t, self / va, other / vb}
		if g.sum() > best.sum() {
			best = g
		}
	}
	e.pairs[k] = best
	return best
}

// grid is the CPUs and GB per GPU an agent may ask for on a type: Synergy's lowest measured
// point, the fair share (each resource the smaller of the job's best case and the type's share,
// as TUNE falls back to) and the job's best case; the fixed-demand ablation has the fair share
// only.
func (e *MAIFS) grid(prof fungible.Profile, gpuType string) [][2]float64 {
	f := e.fair[gpuType]
	fair := [2]float64{min(prof.BestCPUs, f[0]), min(prof.BestMem, f[1])}
	if e.opts.FixedDemand {
		return [][2]float64{{f[0], f[1]}}
	}
	lc, lm := prof.Lowest()
	out := [][2]float64{{lc, lm}}
	for _, p := range [][2]float64{fair, {prof.BestCPUs, prof.BestMem}} {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// candidates lists agent i's candidates: wait, every (type, count, grid point) whole
// allocation, and sharing with up to Partners agents of the same requested count whose measured
// pair beats taking turns. Feasible marks what fits the ledger pl holds.
func (e *MAIFS) candidates(pl *fungible.Placer, agents []fungible.JobStatus, i int) ([]MAIFSCand, error) {
	j := agents[i]
	prof, err := e.m.Sens.Profile(j.Type)
	if err != nil {
		return nil, fmt.Errorf("job %d: %w", j.ID, err)
	}
	out := []MAIFSCand{{Wait: true, Partner: -1, Feasible: true}}
	counts := maifsCounts
	if e.opts.FixedDemand {
		counts = []int{j.GPUs}
	}
	for _, t := range e.types {
		for _, g := range counts {
			v, ok := e.m.Tput.Alone(t, j.Type, g)
			if !ok || v <= 0 || g > e.typeGPU[t] {
				continue
			}
			for _, p := range e.grid(prof, t) {
				f, err := prof.Factor(p[0], p[1])
				if err != nil {
					return nil, fmt.Errorf("job %d (%s): %w", j.ID, j.Type, err)
				}
				out = append(out, MAIFSCand{GPUType: t, GPUs: g, CPUs: p[0], Mem: p[1], Partner: -1, Speed: v * f,
					resource: f, Feasible: pl.Fits(t, g, p[0], p[1])})
			}
		}
	}
	if e.opts.FixedDemand {
		return out, nil
	}
	type mate struct {
		k int
		g pairGain
	}
	var mates []mate
	for k, o := range agents {
		if k == i || o.GPUs != j.GPUs {
			continue
		}
		if g := e.pair(j.Type, o.Type, j.GPUs); g.sum() > 1 {
			mates = append(mates, mate{k, g})
		}
	}
	slices.SortStableFunc(mates, func(a, b mate) int { return cmp.Compare(b.g.sum(), a.g.sum()) })
	lc, lm := prof.Lowest()
	low, _ := prof.Factor(lc, lm)
	for _, mt := range mates[:min(len(mates), e.opts.Partners)] {
		v, _ := e.m.Tput.Alone(mt.g.gpuType, j.Type, j.GPUs)
		out = append(out, MAIFSCand{GPUType: mt.g.gpuType, GPUs: j.GPUs, CPUs: lc, Mem: lm, Partner: mt.k,
			Speed: v * mt.g.self * low, resource: low, partnerKeeps: mt.g.other, Feasible: true})
	}
	return out, nil
}

// candRow encodes candidate c of the agent st; ref is the agent's reference speed (refSpeed).
func (e *MAIFS) candRow(st fungible.JobStatus, c MAIFSCand, ref float64) []float32 {
	row := make([]float32, len(maifsCand))
	if c.Wait {
		row[0] = 1
		if !st.Held {
			row[14] = 1
		}
		return row
	}
	f := e.fair[c.GPUType]
	row[1+slices.Index(fungible.GPUTypes, c.GPUType)] = 1
	row[4] = log2n(c.GPUs)
	row[5] = float32(math.Log2(float64(c.GPUs)/float64(st.GPUs)) / 3)
	row[6], row[7] = float32(c.CPUs/f[0]/4), float32(c.Mem/f[1]/4)
	speed := c.Speed / ref
	row[8], row[9] = float32(speed), float32(c.resource)
	row[10] = hours(st.Remaining() / c.Speed)
	share := 1.0
	if c.Partner >= 0 {
		share = 0.5
		row[12], row[13] = 1, float32(c.partnerKeeps)
	}
	held := float64(c.GPUs) * (share + c.CPUs/f[0] + c.Mem/f[1]) / 3
	row[11] = float32(held / fungible.ServerGPUs)
	if st.Held && st.Prev.GPUType == c.GPUType && st.Prev.GPUCount() == c.GPUs && st.Prev.CPUsPerGPU == c.CPUs &&
		st.Prev.MemPerGPU == c.Mem && (st.Prev.Partner != fungible.NoPartner) == (c.Partner >= 0) {
		row[14] = 1
	}
	row[15] = float32(e.typeGPU[c.GPUType]) / float32(e.total)
	row[16] = float32(speed / held)
	return row
}
