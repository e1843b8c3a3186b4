package jobs

func init() { Register("fifo", func() Policy { return fifo{} }) }

// fifo runs jobs in arrival order, each on the fastest type with room; a later job never
// displaces an earlier one, and one that does not fit lets later ones past (backfill).
type fifo struct{}

func (fifo) Priorities(r *Round, prio [][NumGPUs]float64) { ranked(r, prio, byArrival) }
