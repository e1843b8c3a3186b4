package env

import (
	"fmt"

	"github.com/schedrl/schedrl/sim"
)

// Context is everything an episode starts from besides its decisions: the cluster, the
// fragmentation model and the reward options. Datasets store it once per distinct start so
// observations can be rebuilt exactly by replaying the stored actions.
type Context struct {
	Env     string            `json:"env"`
	Version string            `json:"feature_spec"`
	Nodes   []sim.NodeRecord  `json:"nodes"`
	Shapes  []sim.ShapeRecord `json:"typical_shapes,omitempty"`
	// TieOrder is the logged scheduler's node preference among equal scores (Observation.TiePref).
	TieOrder []int   `json:"tie_order,omitempty"`
	Options  Options `json:"options"`
}

// PlacementContext describes a decision log's starting cluster for the placement environment.
func PlacementContext(h sim.LogHeader, opts Options) Context {
	return Context{Env: PlacementName, Version: PlacementSpec, Nodes: h.Nodes, Shapes: h.Shapes, TieOrder: h.TieOrder, Options: opts}
}

// Cluster builds the context's empty cluster.
func (c Context) Cluster() (*sim.Cluster, error) {
	return sim.LogHeader{Nodes: c.Nodes, Shapes: c.Shapes, TieOrder: c.TieOrder}.NewCluster()
}

// NewPlacement starts a placement environment from the context.
func (c Context) NewPlacement() (*Placement, error) {
	if c.Env != PlacementName || c.Version != PlacementSpec {
		return nil, fmt.Errorf("context is for %s %s, this build encodes %s %s", c.Env, c.Version, PlacementName, PlacementSpec)
	}
	cl, err := c.Cluster()
	if err != nil {
		return nil, err
	}
	return NewPlacement(cl, c.Options), nil
}
