package env

import "github.com/schedrl/schedrl/sim"

// ScoreCache remembers, per node content and task shape, the least-fragmenting GPU choice and
// the fragment change it causes. The key is what the fragmentation measure reads (GPU count and
// type, free CPU, free milli per GPU, the task's CPU and GPU request), so identical nodes (the
// hundreds of idle ones, say) are scored once, and one cache can serve several environments
// over clusters that share a fragmentation model. Not safe for concurrent use.
type ScoreCache struct {
	shapes  map[shapeKey]int32
	classes map[classKey]int32
	m       map[contentKey]scored
}

// NewScoreCache returns an empty cache.
func NewScoreCache() *ScoreCache {
	return &ScoreCache{shapes: map[shapeKey]int32{}, classes: map[classKey]int32{}, m: map[contentKey]scored{}}
}

// scoreCacheLimit bounds the cache; it is cleared when full.
const scoreCacheLimit = 1 << 18

type shapeKey struct {
	cpu, milli int64
	numGPU     int
	types      string
}

type classKey struct {
	gpus    int
	gpuType string
}

type contentKey struct {
	class, shape int32
	cpuFree      int64
	gpu          [sim.MaxGPUsPerNode]int64
}

type scored struct {
	gpus  sim.GPUSet
	delta float64
}

func (k *ScoreCache) shape(t sim.Task) int32 {
	key := shapeKey{t.CPU, t.GPUMilli, t.NumGPU, t.Spec()}
	id, ok := k.shapes[key]
	if !ok {
		id = int32(len(k.shapes))
		k.shapes[key] = id
	}
	return id
}

func (k *ScoreCache) class(n sim.Node) int32 {
	key := classKey{n.GPUs, n.GPUType}
	id, ok := k.classes[key]
	if !ok {
		id = int32(len(k.classes))
		k.classes[key] = id
	}
	return id
}

// score finds node i's least-fragmenting GPU choice for task t, ranked by the fragment change
// itself (sim.LeastFragmentingGPUs).
func (k *ScoreCache) score(c *sim.Cluster, class []int32, shape int32, t sim.Task, i int) (scored, bool) {
	if _, ok := c.TightestGPUs(t, i); !ok {
		return scored{}, false
	}
	free := c.Free(i)
	key := contentKey{class: class[i], shape: shape, cpuFree: free.CPU, gpu: free.GPU}
	if s, hit := k.m[key]; hit {
		return s, true
	}
	gpus, delta, _ := c.LeastFragmentingGPUs(t, i, sim.Delta)
	best := scored{gpus: gpus, delta: delta}
	if len(k.m) >= scoreCacheLimit {
		clear(k.m)
	}
	k.m[key] = best
	return best, true
}
