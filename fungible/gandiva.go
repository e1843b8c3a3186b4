package fungible

func init() { register("gandiva", Gandiva) }

// Gandiva is Gandiva-style packing over fixed demands. A job that fits runs as Fixed places it
// (requested GPU count, fair share). A job that does not fit is packed onto the GPUs of a running
// job with the same GPU count and no partner, when the two jobs' measured paired speeds beat
// running apart: running apart on the same GPUs is time-slicing, each at its speed alone half of
// the time, so packing wins when the sum of each job's paired speed over its speed alone exceeds
// 1. Gandiva knows nothing of CPUs and memory: the pair splits the running job's CPUs and memory
// per GPU evenly, and the paired speeds are measured at those halves (a pair whose halves fall
// below Synergy's lowest measured point cannot form). Of the candidates, the highest sum wins.
func Gandiva(l *Ledger, m SpeedModel, queue []Job) (Plan, error) {
	p := newPlanner(l, m)
	return p.each(queue, func(j Job, prof Profile, types []string) error {
		if ok, err := p.startFixed(j, types); ok || err != nil {
			return err
		}
		return p.pack(j, prof)
	})
}

// pack co-locates j with the running job whose pairing gains most, if any gains.
func (p *planner) pack(j Job, prof Profile) error {
	bestGain, found := 1.0, false
	var incumbent, newcomer Allocation
	for _, id := range p.l.Jobs() {
		in, _ := p.l.Get(id)
		if in.Partner != NoPartner || in.GPUCount() != j.GPUs || !p.m.CanShare(in.GPUType, j.Type, in.JobType, j.GPUs) {
			continue
		}
		if v, ok := p.m.Tput.Alone(in.GPUType, j.Type, j.GPUs); !ok || v <= 0 {
			continue
		}
		inProf, err := p.m.Sens.Profile(in.JobType)
		if err != nil {
			return err
		}
		keepC, giveC := split(in.CPUsPerGPU)
		keepM, giveM := split(in.MemPerGPU)
		if !measured(prof, giveC, giveM) || !measured(inProf, keepC, keepM) {
			continue
		}
		fc, fm := p.fairShare(in.GPUType)
		apart, err := p.m.Speed(alloc(j, in.GPUType, in.Parts, fc, fm, NoPartner), nil)
		if err != nil {
			return err
		}
		inApart, err := p.m.Speed(in, nil)
		if err != nil {
			return err
		}
		shrunk := in
		shrunk.CPUsPerGPU, shrunk.MemPerGPU = keepC, keepM
		nc := alloc(j, in.GPUType, in.Parts, giveC, giveM, in.Job)
		self, err := p.m.Speed(nc, &shrunk)
		if err != nil {
			return err
		}
		other, err := p.m.Speed(shrunk, &nc)
		if err != nil {
			return err
		}
		if gain := self/apart + other/inApart; gain > bestGain {
			bestGain, found, incumbent, newcomer = gain, true, shrunk, nc
		}
	}
	if !found {
		return nil
	}
	if err := p.do(Change{Resize, incumbent}); err != nil {
		return err
	}
	return p.do(Change{Start, newcomer})
}

// split halves an amount per GPU in the ledger's units: the running job keeps the larger half.
func split(x float64) (keep, give float64) {
	m := milli(x)
	return float64(m-m/2) / 1000, float64(m/2) / 1000
}

// measured reports whether Synergy's grid covers cpus and mem per GPU.
func measured(prof Profile, cpus, mem float64) bool {
	_, err := prof.Factor(cpus, mem)
	return err == nil
}
