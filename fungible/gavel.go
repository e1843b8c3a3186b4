package fungible

import (
	"slices"

	"github.com/schedrl/schedrl/jobs"
)

// GavelTable is jobs' throughput table (data/gavel/simulation_throughputs.json) as Throughputs: a
// job type is Gavel's model name, its GPU count the table's scale factor.
func GavelTable(t *jobs.Throughputs) Throughputs { return gavelTable{t} }

type gavelTable struct{ t *jobs.Throughputs }

func gpuOf(gpuType string) (jobs.GPU, bool) {
	i := slices.Index(GPUTypes, gpuType)
	return jobs.GPU(i), i >= 0
}

func (g gavelTable) Alone(gpuType, jobType string, gpus int) (float64, bool) {
	k, ok := gpuOf(gpuType)
	if !ok {
		return 0, false
	}
	v, ok := g.t.Alone(jobs.JobType{Model: jobType, Scale: gpus})
	return v[k], ok
}

func (g gavelTable) Paired(gpuType, jobType string, gpus int, otherType string, otherGPUs int) (float64, float64, bool) {
	k, ok := gpuOf(gpuType)
	if !ok {
		return 0, 0, false
	}
	v, ok := g.t.Pair(jobs.JobType{Model: jobType, Scale: gpus}, jobs.JobType{Model: otherType, Scale: otherGPUs}, k)
	return v[0], v[1], ok
}
