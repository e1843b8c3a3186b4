package sim

// Metrics summarises the cluster's allocation and fragmentation.
type Metrics struct {
	// GPUAllocPct is allocated GPU milli as a percentage of GPU capacity (shares counted in
	// milli): the FGD paper's headline "GPU allocation ratio".
	GPUAllocPct float64
	// GPUOccupiedPct is the percentage of GPUs with any share allocated.
	GPUOccupiedPct float64
	CPUAllocPct    float64
	MemAllocPct    float64
	// FragGPU is the cluster fragment in GPUs (milli / 1000).
	FragGPU float64
	// FragRatioPct is the fragment as a percentage of idle GPU milli (0 when nothing is idle).
	FragRatioPct float64
	// IdleGPU is the idle GPU capacity in GPUs.
	IdleGPU float64
	Running int
}

func pct(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}

// quickMetrics is Metrics without the per-GPU scan (GPUOccupiedPct stays 0).
func (c *Cluster) quickMetrics() Metrics {
	idle := c.capGPU - c.usedGPU
	m := Metrics{
		GPUAllocPct: pct(c.usedGPU, c.capGPU),
		CPUAllocPct: pct(c.usedCPU, c.capCPU),
		MemAllocPct: pct(c.usedMem, c.capMem),
		FragGPU:     c.frag / MilliPerGPU,
		IdleGPU:     float64(idle) / MilliPerGPU,
		Running:     len(c.placed),
	}
	if idle > 0 {
		m.FragRatioPct = 100 * c.frag / float64(idle)
	}
	return m
}

// Metrics computes the current metrics; all but GPUOccupiedPct come from maintained totals.
func (c *Cluster) Metrics() Metrics {
	m := c.quickMetrics()
	var occupied, gpus int64
	for i := range c.st {
		for g := 0; g < c.nodes[i].GPUs; g++ {
			gpus++
			if c.st[i].gpuFree[g] < MilliPerGPU {
				occupied++
			}
		}
	}
	m.GPUOccupiedPct = pct(occupied, gpus)
	return m
}

// Capacity returns the cluster's total CPU (milli), memory (MiB) and GPU (milli).
func (c *Cluster) Capacity() (cpu, mem, gpuMilli int64) { return c.capCPU, c.capMem, c.capGPU }

// Used returns the allocated CPU (milli), memory (MiB) and GPU (milli).
func (c *Cluster) Used() (cpu, mem, gpuMilli int64) { return c.usedCPU, c.usedMem, c.usedGPU }
