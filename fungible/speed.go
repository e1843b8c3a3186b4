package fungible

import "fmt"

// Throughputs is Gavel's measured table (steps per second) as the jobs world reads it.
// Alone is a job type's whole-job throughput on gpus GPUs of a type (the table's "null" entry).
// Paired is the pair entry for two jobs sharing the same GPUs: both throughputs as measured,
// [0, 0] where the pair cannot share; ok is false where the table has no entry.
type Throughputs interface {
	Alone(gpuType, jobType string, gpus int) (float64, bool)
	Paired(gpuType, jobType string, gpus int, otherType string, otherGPUs int) (self, other float64, ok bool)
}

// SpeedModel computes a job's speed from an allocation.
type SpeedModel struct {
	Tput Throughputs
	Sens *Sensitivity
}

// Factors are the three measured factors of a speed: Gavel's throughput alone on the allocation's
// GPU type and count (steps/s), Synergy's relative throughput at its CPUs and memory per GPU, and
// the co-location ratio (paired throughput over alone, 1 without a partner).
type Factors struct {
	Throughput, Resource, Colocation float64
}

// Speed is the product of the factors, in steps per second.
func (f Factors) Speed() float64 { return f.Throughput * f.Resource * f.Colocation }

// Factors measures an allocation, sharing its GPUs with partner when partner is not nil.
func (m SpeedModel) Factors(a Allocation, partner *Allocation) (Factors, error) {
	g := a.GPUCount()
	alone, ok := m.Tput.Alone(a.GPUType, a.JobType, g)
	if !ok || alone <= 0 {
		return Factors{}, fmt.Errorf("job %d: no throughput for %q on %d %s GPUs", a.Job, a.JobType, g, a.GPUType)
	}
	prof, err := m.Sens.Profile(a.JobType)
	if err != nil {
		return Factors{}, fmt.Errorf("job %d: %w", a.Job, err)
	}
	res, err := prof.Factor(a.CPUsPerGPU, a.MemPerGPU)
	if err != nil {
		return Factors{}, fmt.Errorf("job %d (%s): %w", a.Job, a.JobType, err)
	}
	f := Factors{Throughput: alone, Resource: res, Colocation: 1}
	if partner != nil {
		self, _, err := m.pair(a, *partner)
		if err != nil {
			return Factors{}, err
		}
		f.Colocation = self / alone
	}
	return f, nil
}

// Speed is an allocation's speed in steps per second (see Factors).
func (m SpeedModel) Speed(a Allocation, partner *Allocation) (float64, error) {
	f, err := m.Factors(a, partner)
	return f.Speed(), err
}

// Held is the speed of a job the ledger holds, with its partner there if it has one.
func (m SpeedModel) Held(l *Ledger, job int) (float64, error) {
	a, ok := l.Get(job)
	if !ok {
		return 0, fmt.Errorf("job %d holds no allocation", job)
	}
	if a.Partner == NoPartner {
		return m.Speed(a, nil)
	}
	p, _ := l.Get(a.Partner)
	return m.Speed(a, &p)
}

// CanShare reports whether two job types may share gpus GPUs of a type: the table has their pair
// entry and it is not [0, 0].
func (m SpeedModel) CanShare(gpuType, jobType, otherType string, gpus int) bool {
	self, other, ok := m.Tput.Paired(gpuType, jobType, gpus, otherType, gpus)
	return ok && self > 0 && other > 0
}

func (m SpeedModel) pair(a, b Allocation) (self, other float64, err error) {
	self, other, ok := m.Tput.Paired(a.GPUType, a.JobType, a.GPUCount(), b.JobType, b.GPUCount())
	switch {
	case !ok:
		return 0, 0, fmt.Errorf("jobs %d and %d: no pair throughput for %q with %q on %d %s GPUs", a.Job, b.Job, a.JobType, b.JobType, a.GPUCount(), a.GPUType)
	case self <= 0 || other <= 0:
		return 0, 0, fmt.Errorf("jobs %d and %d: %q and %q cannot share %s GPUs (measured pair throughput [%g, %g])", a.Job, b.Job, a.JobType, b.JobType, a.GPUType, self, other)
	}
	return self, other, nil
}
