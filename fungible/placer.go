package fungible

// Placer places allocations one at a time on a ledger it owns, the way the rules place (place:
// whole onto the fullest server that holds it, else across the fullest servers first), for
// policies that decide job by job outside this package (a learned policy's decoder).
type Placer struct{ p *planner }

// NewPlacer starts from a copy of l; l is left as it was.
func NewPlacer(l *Ledger, m SpeedModel) *Placer { return &Placer{newPlanner(l, m)} }

// Ledger is the placer's ledger, with every change made so far.
func (pl *Placer) Ledger() *Ledger { return pl.p.l }

// Plan is the changes made so far and the ledger after them.
func (pl *Placer) Plan() Plan { return Plan{Changes: pl.p.changes, Ledger: pl.p.l} }

// Start places job j on gpus GPUs of gpuType with cpus and mem per GPU and applies it; false
// when it does not fit (the ledger is unchanged).
func (pl *Placer) Start(j Job, gpuType string, gpus int, cpus, mem float64) (bool, error) {
	parts, ok := pl.p.place(gpuType, gpus, cpus, mem, nil)
	if !ok {
		return false, nil
	}
	return true, pl.p.do(Change{Start, alloc(j, gpuType, parts, cpus, mem, NoPartner)})
}

// Share starts job j on the GPUs of partner (held, alone) with cpus and mem per GPU; false when
// the partner holds nothing or already shares, the pair cannot share or the servers lack room.
func (pl *Placer) Share(j Job, partner int, cpus, mem float64) (bool, error) {
	if !pl.CanShare(j, partner, cpus, mem) {
		return false, nil
	}
	in, _ := pl.p.l.Get(partner)
	return true, pl.p.do(Change{Start, alloc(j, in.GPUType, in.Parts, cpus, mem, partner)})
}

// CanShare reports whether Share would start j on partner's GPUs now.
func (pl *Placer) CanShare(j Job, partner int, cpus, mem float64) bool {
	in, ok := pl.p.l.Get(partner)
	if !ok || in.Partner != NoPartner || !pl.p.m.CanShare(in.GPUType, j.Type, in.JobType, in.GPUCount()) || !pl.p.fitsOn(in.Parts, cpus, mem) {
		return false
	}
	v, ok := pl.p.m.Tput.Alone(in.GPUType, j.Type, in.GPUCount())
	return ok && v > 0
}

// Fits reports whether Start would place gpus GPUs of gpuType at cpus and mem per GPU now.
func (pl *Placer) Fits(gpuType string, gpus int, cpus, mem float64) bool {
	_, total := pl.p.candidates(gpuType, milli(cpus), milli(mem), nil)
	return total >= gpus
}
