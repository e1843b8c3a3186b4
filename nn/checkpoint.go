package nn

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/sugarme/gotch"
	gnn "github.com/sugarme/gotch/nn"
	"github.com/sugarme/gotch/ts"

	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/internal/checkpoint"
)

// Lineage is what a checkpoint records about how it was made, besides the architecture.
type Lineage struct {
	DatasetHash  string
	ConfigHash   string
	CodeRevision string
	Parent       string         // manifest digest of the checkpoint training started from
	Hyper        map[string]any // training hyper-parameters, stored beside "arch"
	Metrics      map[string]float64
	History      map[string][]checkpoint.Step
}

// SaveCheckpoint writes net's weights to dir/model.ot (under a temporary name, then renamed)
// and then the manifest, last, covering every file in dir. A reader that catches dir between
// the two sees a checksum mismatch, never a silently different network.
func SaveCheckpoint(dir string, net *Net, lin Lineage) (checkpoint.Manifest, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return checkpoint.Manifest{}, err
	}
	if err := SaveWeights(net, filepath.Join(dir, checkpoint.ModelFile)); err != nil {
		return checkpoint.Manifest{}, err
	}
	return WriteManifest(dir, net.Arch, lin)
}

// WriteManifest (re)writes dir's manifest for the weights already in dir/model.ot, e.g. after
// adding a file beside them.
func WriteManifest(dir string, arch Arch, lin Lineage) (checkpoint.Manifest, error) {
	hyper := map[string]any{"arch": arch}
	for k, v := range lin.Hyper {
		hyper[k] = v
	}
	m := checkpoint.Manifest{
		Model: arch.Kind, Hyper: hyper, Env: arch.Env, FeatureVersion: featureVersion(arch.FeatureSpec),
		DatasetHash: lin.DatasetHash, ConfigHash: lin.ConfigHash, CodeRevision: lin.CodeRevision, Parent: lin.Parent,
		Metrics: lin.Metrics, History: lin.History,
	}
	return checkpoint.Write(dir, m)
}

// SaveWeights writes net's weights to path through a temporary file in the same directory,
// in name order, so the same weights always give the same bytes. gotch's VarStore.Save walks a
// Go map: each save of one network wrote its tensors in another order, so equal weights had
// different sha256s and every pipeline stage after a retrained checkpoint got a new key.
func SaveWeights(net *Net, path string) error { return SaveVarStore(net.VS, path) }

// SaveVarStore is SaveWeights for any network's VarStore.
func SaveVarStore(vs *gnn.VarStore, path string) error {
	tmp := filepath.Join(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	if err := saveSorted(vs, tmp); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("save %s: %w", path, err)
	}
	return os.Rename(tmp, path)
}

func saveSorted(vs *gnn.VarStore, path string) error {
	vars := vs.Variables()
	named := make([]ts.NamedTensor, 0, len(vars))
	for _, name := range slices.Sorted(maps.Keys(vars)) {
		t := vars[name]
		named = append(named, ts.NamedTensor{Name: name, Tensor: &t})
	}
	err := ts.SaveMultiNew(named, path)
	runtime.KeepAlive(vs) // the copies in named share its tensors' memory
	return err
}

// LoadWeights copies the weights of a model.ot file into net, by name, as gotch's
// VarStore.Load does less its clean-up, which sleeps a second between two garbage
// collections: a rollout worker loads every update's weights.
func LoadWeights(net *Net, path string) (err error) {
	pinned(func() { err = loadWeights(net.VS, net.VS.Device(), path) })
	return err
}

func loadWeights(vs *gnn.VarStore, dev gotch.Device, path string) error {
	loaded, err := ts.LoadMultiWithDevice(path, dev)
	if err != nil {
		return fmt.Errorf("load %s: %w", path, err)
	}
	defer func() {
		for _, nt := range loaded {
			nt.Tensor.MustDrop()
		}
	}()
	byName := make(map[string]*ts.Tensor, len(loaded))
	for _, nt := range loaded {
		byName[nt.Name] = nt.Tensor
	}
	vars := vs.Variables()
	if len(byName) != len(vars) {
		return fmt.Errorf("load %s: %d tensors, the network has %d", path, len(byName), len(vars))
	}
	for _, name := range slices.Sorted(maps.Keys(vars)) {
		src, ok := byName[name]
		if !ok {
			return fmt.Errorf("load %s: no tensor %q", path, name)
		}
		dst := vars[name]
		if !slices.Equal(src.MustSize(), dst.MustSize()) {
			return fmt.Errorf("load %s: tensor %q is %v, the network's %v", path, name, src.MustSize(), dst.MustSize())
		}
		ts.NoGrad(func() { dst.Copy_(src) })
	}
	runtime.KeepAlive(vs)
	return nil
}

// LoadCheckpoint verifies dir's manifest and files, refuses a network for another environment
// or feature spec than this build encodes, and rebuilds the network on dev from the manifest
// alone (no config needed).
func LoadCheckpoint(dir string, dev gotch.Device) (*Net, checkpoint.Manifest, error) {
	m, err := checkpoint.Read(dir)
	if err != nil {
		return nil, m, err
	}
	arch, err := ArchOf(m)
	if err != nil {
		return nil, m, fmt.Errorf("checkpoint %s: %w", dir, err)
	}
	spec, err := env.SpecOf(arch.Env)
	if err != nil {
		return nil, m, fmt.Errorf("checkpoint %s: %w", dir, err)
	}
	if arch.FeatureSpec != spec.Version || arch.NodeDim != len(spec.Node) || arch.TaskDim != len(spec.Task) || arch.GlobalDim != len(spec.Global) {
		return nil, m, fmt.Errorf("checkpoint %s: trained on feature spec %s (%d node, %d task, %d global features); this build encodes %s (%d, %d, %d): retrain or use a matching build",
			dir, arch.FeatureSpec, arch.NodeDim, arch.TaskDim, arch.GlobalDim, spec.Version, len(spec.Node), len(spec.Task), len(spec.Global))
	}
	net, err := NewNet(arch, dev)
	if err != nil {
		return nil, m, fmt.Errorf("checkpoint %s: %w", dir, err)
	}
	pinned(func() { err = net.VS.Load(filepath.Join(dir, checkpoint.ModelFile)) })
	if err != nil {
		return nil, m, fmt.Errorf("checkpoint %s: %s: %w", dir, checkpoint.ModelFile, err)
	}
	return net, m, nil
}

// ArchOf reads the architecture a manifest records under hyper.arch.
func ArchOf(m checkpoint.Manifest) (Arch, error) {
	raw, ok := m.Hyper["arch"]
	if !ok {
		return Arch{}, fmt.Errorf("manifest field hyper.arch: missing")
	}
	data, err := json.Marshal(raw)
	if err != nil {
		return Arch{}, fmt.Errorf("manifest field hyper.arch: %w", err)
	}
	var a Arch
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return Arch{}, fmt.Errorf("manifest field hyper.arch: %w", err)
	}
	if a.Kind != m.Model {
		return Arch{}, fmt.Errorf("manifest field model %q disagrees with hyper.arch.kind %q", m.Model, a.Kind)
	}
	if err := a.validate(); err != nil {
		return Arch{}, fmt.Errorf("manifest field hyper.arch: %w", err)
	}
	return a, nil
}

// featureVersion is the number after the last "-v" of a feature-spec name ("placement-v1" is
// 1), the manifest's integer form of it; 0 when there is none.
func featureVersion(spec string) int {
	i := strings.LastIndex(spec, "-v")
	if i < 0 {
		return 0
	}
	n, err := strconv.Atoi(spec[i+2:])
	if err != nil {
		return 0
	}
	return n
}
