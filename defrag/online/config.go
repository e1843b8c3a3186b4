package online

import (
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/sim"
)

// ConfigOf is the trigger, budget, cap and downtime of a defrag_online config section.
func ConfigOf(c config.DefragOnlineConfig) Config {
	return Config{Every: c.Every, HeadWait: c.HeadWait, Budget: c.Budget, CapPerHour: c.CapPerHour,
		DowntimeBase: c.DowntimeBase, DowntimePerGPU: c.DowntimePerGPU}
}

// TimelineOf is the timeline of a defrag_online section on nodes with a trace at load and seed
// (FGD placement, FIFO with backfill, as the command's defaults).
func TimelineOf(c config.DefragOnlineConfig, nodes []sim.Node, trace []sim.Task, model *sim.FragModel, load float64, seed uint64) Timeline {
	return Timeline{Nodes: nodes, Trace: trace, Model: model, Load: load, Seed: seed, Duration: c.Duration, Warmup: c.Warmup,
		Cap: c.Cap, Placer: "fgd", Queue: "backfill"}
}
