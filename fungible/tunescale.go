package fungible

func init() { register("tune-scale", TuneScale) }

// TuneScale is TUNE followed by a second pass that fills the GPUs TUNE left idle: in queue
// order, each job TUNE started without a partner grows on its GPU type, at its CPUs and memory
// per GPU, to the largest count of Gavel's table that the free GPUs hold and that is measured
// faster than the count it has (Gavel's multi-GPU throughputs are whole-job speeds). No job
// TUNE would start is kept out by a grown one: growth only takes what TUNE left. Its plan
// starts each grown job once, at its grown allocation, after TUNE's other changes.
func TuneScale(l *Ledger, m SpeedModel, queue []Job) (Plan, error) {
	plan, err := Tune(l, m, queue)
	if err != nil {
		return plan, err
	}
	p := newPlanner(plan.Ledger, m)
	var grown []Change
	for _, j := range queue {
		a, held := p.l.Get(j.ID)
		if !held || a.Partner != NoPartner {
			continue
		}
		best := a
		bestV, _ := m.Tput.Alone(a.GPUType, j.Type, a.GPUCount())
		if err := p.l.Release(j.ID); err != nil {
			return Plan{}, err
		}
		for _, g := range []int{2, 4, 8} {
			v, ok := m.Tput.Alone(a.GPUType, j.Type, g)
			if g <= best.GPUCount() || !ok || v <= bestV {
				continue
			}
			if parts, ok := p.place(a.GPUType, g, a.CPUsPerGPU, a.MemPerGPU, nil); ok {
				best, bestV = alloc(j, a.GPUType, parts, a.CPUsPerGPU, a.MemPerGPU, NoPartner), v
			}
		}
		if err := p.l.Apply(best); err != nil {
			return Plan{}, err
		}
		if best.GPUCount() != a.GPUCount() {
			grown = append(grown, Change{Start, best})
		}
	}
	if len(grown) == 0 {
		return Plan{Changes: plan.Changes, Ledger: p.l}, nil
	}
	moved := make(map[int]bool, len(grown))
	for _, c := range grown {
		moved[c.Alloc.Job] = true
	}
	var changes []Change
	for _, c := range plan.Changes {
		if !moved[c.Alloc.Job] {
			changes = append(changes, c)
		}
	}
	return Plan{Changes: append(changes, grown...), Ledger: p.l}, nil
}
