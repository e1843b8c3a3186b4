package fungible

import (
	"fmt"

	"github.com/schedrl/schedrl/jobs"
)

// WorldSpec is the fungible world as a config section names it: the cluster in V:P:K GPUs, the
// server size, and the three tables of the speed model.
type WorldSpec struct {
	Cluster     string
	ServerGPUs  int
	Throughputs string // Gavel's throughput table
	Profiles    string // Synergy's CPU and memory profiles
	Mapping     string // Gavel job type to Synergy model
}

// World is a fungible world built from its spec.
type World struct {
	Cluster Cluster
	Model   SpeedModel
}

// LoadWorld builds the cluster and the speed model of spec, the one place every stage builds
// the fungible world from config; each error names the field at fault behind prefix ("maifs."
// gives "maifs.throughputs: ...").
func LoadWorld(spec WorldSpec, prefix string) (World, error) {
	cluster, err := NewMixCluster(spec.Cluster, spec.ServerGPUs)
	if err != nil {
		return World{}, fmt.Errorf("%scluster: %w", prefix, err)
	}
	m, err := LoadModel(spec, prefix)
	if err != nil {
		return World{}, err
	}
	return World{Cluster: cluster, Model: m}, nil
}

// LoadModel is spec's speed model alone, for a caller whose cluster comes from elsewhere (a
// dataset's manifest, a log's header).
func LoadModel(spec WorldSpec, prefix string) (SpeedModel, error) {
	table, err := jobs.LoadThroughputs(spec.Throughputs)
	if err != nil {
		return SpeedModel{}, fmt.Errorf("%sthroughputs: %w", prefix, err)
	}
	p, err := LoadProfiles(spec.Profiles)
	if err != nil {
		return SpeedModel{}, fmt.Errorf("%sprofiles: %w", prefix, err)
	}
	sens, err := LoadSensitivity(spec.Mapping, p)
	if err != nil {
		return SpeedModel{}, fmt.Errorf("%smapping: %w", prefix, err)
	}
	return SpeedModel{Tput: GavelTable(table), Sens: sens}, nil
}
