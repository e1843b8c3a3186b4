package fungible

func init() { register("fixed", Fixed) }

// Fixed is the fixed-demand rule of the queue policies (FIFO, SJF, SRTF, Tiresias): the requested
// GPU count on the fastest GPU type that has room, with the type's fair share of CPUs and memory.
func Fixed(l *Ledger, m SpeedModel, queue []Job) (Plan, error) {
	p := newPlanner(l, m)
	for _, j := range queue {
		if _, held := p.l.Get(j.ID); held {
			continue
		}
		types, err := p.typesBySpeed(j, j.GPUs)
		if err != nil {
			return Plan{}, err
		}
		for _, t := range types {
			fc, fm := p.l.Cluster().FairShare(t)
			if parts, ok := p.place(t, j.GPUs, fc, fm, nil); ok {
				if err := p.do(Change{Start, alloc(j, t, parts, fc, fm, NoPartner)}); err != nil {
					return Plan{}, err
				}
				break
			}
		}
	}
	return p.plan(), nil
}
