package fungible

import (
	"cmp"
	"fmt"

	"github.com/schedrl/schedrl/jobs"
)

// WorldSpec is the fungible world as a config section or a command's flags name it: the
// cluster in V:P:K GPUs, the server size, and the three tables of the speed model.
type WorldSpec struct {
	Cluster     string
	ServerGPUs  int
	Throughputs string // Gavel's throughput table
	Profiles    string // Synergy's CPU and memory profiles
	Mapping     string // Gavel job type to Synergy model
	// MappingKey is the mapping's name in errors, "mapping" when empty (eval's timed section
	// calls it synergy_map).
	MappingKey string
}

// World is a fungible world built from its spec.
type World struct {
	Cluster Cluster
	Model   SpeedModel
	Table   *jobs.Throughputs // Gavel's table, which trace workloads are read against
}

// LoadWorld builds the cluster and the speed model of spec, the one place every stage and
// command builds the fungible world from config; each error names the field at fault behind
// prefix ("maifs." gives "maifs.throughputs: ...", "--" gives "--throughputs: ...").
func LoadWorld(spec WorldSpec, prefix string) (World, error) {
	cluster, err := NewMixCluster(spec.Cluster, spec.ServerGPUs)
	if err != nil {
		return World{}, fmt.Errorf("%scluster: %w", prefix, err)
	}
	table, err := loadTable(spec, prefix)
	if err != nil {
		return World{}, err
	}
	m, err := ModelOf(table, spec, prefix)
	if err != nil {
		return World{}, err
	}
	return World{Cluster: cluster, Model: m, Table: table}, nil
}

// LoadModel is spec's speed model alone, for a caller whose cluster comes from elsewhere (a
// dataset's manifest, a log's header).
func LoadModel(spec WorldSpec, prefix string) (SpeedModel, error) {
	table, err := loadTable(spec, prefix)
	if err != nil {
		return SpeedModel{}, err
	}
	return ModelOf(table, spec, prefix)
}

func loadTable(spec WorldSpec, prefix string) (*jobs.Throughputs, error) {
	table, err := jobs.LoadThroughputs(spec.Throughputs)
	if err != nil {
		return nil, fmt.Errorf("%sthroughputs: %w", prefix, err)
	}
	return table, nil
}

// ModelOf is the speed model of Gavel's table, already loaded, with spec's Synergy profiles
// through its job-type mapping.
func ModelOf(table *jobs.Throughputs, spec WorldSpec, prefix string) (SpeedModel, error) {
	p, err := LoadProfiles(spec.Profiles)
	if err != nil {
		return SpeedModel{}, fmt.Errorf("%sprofiles: %w", prefix, err)
	}
	sens, err := LoadSensitivity(spec.Mapping, p)
	if err != nil {
		return SpeedModel{}, fmt.Errorf("%s%s: %w", prefix, cmp.Or(spec.MappingKey, "mapping"), err)
	}
	return SpeedModel{Tput: GavelTable(table), Sens: sens}, nil
}
