package sim

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Shape is a typical task shape of the fragmentation measure with its weight.
type Shape struct {
	CPU      int64
	NumGPU   int
	GPUMilli int64
	GPUTypes []string
	Weight   float64
}

// FragModel is the workload's typical shapes, whose weights sum to 1.
type FragModel struct {
	Shapes []Shape
}

// shapeKey groups tasks by the resources the measure looks at (memory is not one of them).
type shapeKey struct {
	cpu      int64
	milli    int64
	numGPU   int
	gpuTypes string
}

// TypicalShapes groups tasks by shape (CPU, GPU count, per-GPU milli, GPU-type constraint),
// sorts shapes by decreasing popularity (ties: larger CPU, milli, GPU count, type string first),
// and keeps the most popular until they cover at least coverage (e.g. 0.95) of all tasks,
// CPU-only tasks included; weights are renormalised to sum to 1.
func TypicalShapes(tasks []Task, coverage float64) (*FragModel, error) {
	if len(tasks) == 0 {
		return nil, fmt.Errorf("typical shapes: no tasks")
	}
	if coverage <= 0 || coverage > 1 {
		return nil, fmt.Errorf("typical shapes: coverage %v outside (0, 1]", coverage)
	}
	counts := map[shapeKey]int{}
	for _, t := range tasks {
		counts[shapeKey{t.CPU, t.GPUMilli, t.NumGPU, t.Spec()}]++
	}
	keys := make([]shapeKey, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		switch {
		case counts[a] != counts[b]:
			return counts[a] > counts[b]
		case a.cpu != b.cpu:
			return a.cpu > b.cpu
		case a.milli != b.milli:
			return a.milli > b.milli
		case a.numGPU != b.numGPU:
			return a.numGPU > b.numGPU
		default:
			return a.gpuTypes > b.gpuTypes
		}
	})
	total, need, cum := float64(len(tasks)), coverage*float64(len(tasks)), 0.0
	m := &FragModel{}
	for _, k := range keys {
		if cum >= need {
			break
		}
		cum += float64(counts[k])
		var types []string
		if k.gpuTypes != "" {
			types = strings.Split(k.gpuTypes, "|")
		}
		m.Shapes = append(m.Shapes, Shape{CPU: k.cpu, NumGPU: k.numGPU, GPUMilli: k.milli, GPUTypes: types, Weight: float64(counts[k]) / total})
	}
	for i := range m.Shapes {
		m.Shapes[i].Weight /= cum / total
	}
	return m, nil
}

// fragOf is the fragment of node i if it had cpuFree and gpu free: for each typical shape, the
// idle GPU milli that shape cannot use, weighted.
func (c *Cluster) fragOf(i int, cpuFree int64, gpu *[MaxGPUsPerNode]int32) float64 {
	if c.model == nil {
		return 0
	}
	n := c.nodes[i].GPUs
	var idle int64
	for g := 0; g < n; g++ {
		idle += int64(gpu[g])
	}
	if idle == 0 {
		return 0
	}
	tbit := c.nodeTypeBit[i]
	var f float64
	for k := range c.model.Shapes {
		sh := &c.model.Shapes[k]
		if sh.GPUMilli == 0 || tbit&c.shapeMask[k] == 0 || cpuFree < sh.CPU {
			f += sh.Weight * float64(idle)
			continue
		}
		fit, small := 0, int64(0)
		for g := 0; g < n; g++ {
			if v := int64(gpu[g]); v >= sh.GPUMilli {
				fit++
			} else {
				small += v
			}
		}
		if fit >= sh.NumGPU {
			f += sh.Weight * float64(small)
		} else {
			f += sh.Weight * float64(idle)
		}
	}
	return f
}

// FragAfter is node ch.Node's fragment if t were placed at ch (ch must be feasible).
func (c *Cluster) FragAfter(t Task, ch Choice) float64 {
	s := &c.st[ch.Node]
	gpu := s.gpuFree
	for g := 0; g < MaxGPUsPerNode; g++ {
		if ch.GPUs.Has(g) {
			gpu[g] -= int32(t.GPUMilli)
		}
	}
	return c.fragOf(ch.Node, s.cpuFree-t.CPU, &gpu)
}

// FGDScore is the FGD paper's integer score of a fragment increase delta (milli-GPU):
// sigmoid(-delta / 1000) x 100, truncated, so changes within a few tens of milli tie. Higher
// is better.
func FGDScore(delta float64) float64 {
	return float64(int64(1 / (1 + math.Exp(delta/1000)) * 100))
}

// LeastFragmentingGPUs is FGD's choice inside node i: the GPUs for t whose fragment change
// ranks first by rank (the smallest rank(delta); the lowest-indexed GPU on ties), and that
// change. A task that does not share a GPU has one choice, TightestGPUs. ok is false when t
// does not fit on node i. FGD ranks by its integer score (rank = -FGDScore), so changes a few
// milli-GPU apart tie; the environments' scores rank by the change itself (rank = Delta).
func (c *Cluster) LeastFragmentingGPUs(t Task, i int, rank func(delta float64) float64) (gpus GPUSet, delta float64, ok bool) {
	gpus, ok = c.TightestGPUs(t, i)
	if !ok {
		return 0, 0, false
	}
	if !t.Sharing() {
		return gpus, c.FragDelta(t, Choice{Node: i, GPUs: gpus}), true
	}
	free := c.Free(i)
	best := math.Inf(1)
	var tried [MaxGPUsPerNode]int64
	nTried := 0
gpus:
	for g := 0; g < free.GPUs; g++ {
		if free.GPU[g] < t.GPUMilli {
			continue
		}
		// GPUs with the same free milli give the same fragment; the first one stands for all.
		for _, v := range tried[:nTried] {
			if v == free.GPU[g] {
				continue gpus
			}
		}
		tried[nTried] = free.GPU[g]
		nTried++
		set := NewGPUSet(g)
		if d := c.FragDelta(t, Choice{Node: i, GPUs: set}); rank(d) < best {
			gpus, delta, best = set, d, rank(d)
		}
	}
	return gpus, delta, true
}

// Delta ranks a fragment change by itself (LeastFragmentingGPUs' rank for the smallest change).
func Delta(d float64) float64 { return d }

// FragDelta is how much placing t at ch would raise its node's fragment (negative: lowers it).
func (c *Cluster) FragDelta(t Task, ch Choice) float64 {
	return c.FragAfter(t, ch) - c.st[ch.Node].frag
}

// ClusterFrag is the cluster's fragment in milli-GPU (sum over nodes).
func (c *Cluster) ClusterFrag() float64 { return c.frag }

// FragWithout is the fragment of a running task's node if the task were removed.
func (c *Cluster) FragWithout(name string) (float64, bool) {
	p, ok := c.placed[name]
	if !ok {
		return 0, false
	}
	s := &c.st[p.Choice.Node]
	gpu := s.gpuFree
	for _, g := range p.Choice.GPUs.Indices() {
		gpu[g] += int32(p.Task.GPUMilli)
	}
	return c.fragOf(p.Choice.Node, s.cpuFree+p.Task.CPU, &gpu), true
}
