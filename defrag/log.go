package defrag

import (
	"cmp"
	"maps"
	"slices"
	"strconv"

	"github.com/schedrl/schedrl/internal/atomicfile"
	"github.com/schedrl/schedrl/sim"
)

// WriteLog writes a plan as a decision log (docs/decision-log.md), the input the datasets stage
// reads: the start as arrive+bind events for the running tasks (by name) and arrive events for
// the pending queue (left waiting), then one migrate event per step. meta goes in the header,
// with the plan's budget and placer added (a defrag dataset rebuilds its environment from them).
func WriteLog(path string, pr Problem, p Plan, meta map[string]string) error {
	f, err := atomicfile.Create(path, 0o644)
	if err != nil {
		return err
	}
	defer f.Abort()
	c := pr.Cluster
	meta = maps.Clone(meta)
	if meta == nil {
		meta = map[string]string{}
	}
	meta["budget"], meta["placer"] = strconv.Itoa(p.Budget), p.Placer
	lw, err := sim.NewLogWriter(f, sim.NewLogHeader(c, meta))
	if err != nil {
		return err
	}
	running := c.Placements()
	slices.SortFunc(running, func(a, b sim.Placement) int { return cmp.Compare(a.Task.Name, b.Task.Name) })
	for _, r := range running {
		if err := lw.Arrive(r.Task); err != nil {
			return err
		}
		if err := lw.Bind(r.Task.Name, c.Node(r.Choice.Node).Name, r.Choice.GPUs); err != nil {
			return err
		}
	}
	for _, t := range pr.Pending {
		if err := lw.Arrive(t); err != nil {
			return err
		}
	}
	for _, s := range p.Steps {
		if err := lw.Migrate(s.Task, s.FromNode, sim.NewGPUSet(s.FromGPUs...), s.ToNode, sim.NewGPUSet(s.ToGPUs...)); err != nil {
			return err
		}
	}
	if err := lw.Flush(); err != nil {
		return err
	}
	return f.Commit()
}
