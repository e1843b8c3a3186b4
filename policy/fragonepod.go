package policy

import "github.com/schedrl/schedrl/sim"

// frag-one-pod: visit nodes in decreasing fragment; on each evict the one task whose removal
// lowers the node's fragment the most (skipping nodes where no removal helps), until budget
// tasks are out; then re-place them all with the placement policy.
func init() {
	registerDefragger("frag-one-pod", func() Defragmenter {
		return &evictThenReplace{name: "frag-one-pod", pick: func(c *sim.Cluster, budget int, log *sim.LogWriter) ([]sim.Placement, error) {
			tasks := byNode(c)
			var victims []sim.Placement
			for _, i := range nodesByFragment(c) {
				if len(victims) >= budget {
					break
				}
				if v, ok := bestVictim(c, tasks[i]); ok {
					victims = append(victims, v)
				}
			}
			return victims, evict(c, victims, log)
		}}
	})
}
