package fungible

func init() { register("fixed", Fixed) }

// Fixed is the fixed-demand rule of the queue policies (FIFO, SJF, SRTF, Tiresias): the requested
// GPU count on the fastest GPU type that has room, with the type's fair share of CPUs and memory.
func Fixed(l *Ledger, m SpeedModel, queue []Job) (Plan, error) {
	p := newPlanner(l, m)
	return p.each(queue, func(j Job, _ Profile, types []string) error {
		_, err := p.startFixed(j, types)
		return err
	})
}

// startFixed starts j at its requested count and the fair share on the first of types with room.
func (p *planner) startFixed(j Job, types []string) (bool, error) {
	for _, t := range types {
		fc, fm := p.fairShare(t)
		if parts, ok := p.place(t, j.GPUs, fc, fm, nil); ok {
			return true, p.do(Change{Start, alloc(j, t, parts, fc, fm, NoPartner)})
		}
	}
	return false, nil
}
