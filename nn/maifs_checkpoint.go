package nn

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/sugarme/gotch"

	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/internal/checkpoint"
)

// SaveMAIFS writes a multi-agent checkpoint: model.ot, then the manifest last (as SaveCheckpoint).
func SaveMAIFS(dir string, net *MAIFSNet, lin Lineage) (checkpoint.Manifest, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return checkpoint.Manifest{}, err
	}
	if err := SaveVarStore(net.VS, filepath.Join(dir, checkpoint.ModelFile)); err != nil {
		return checkpoint.Manifest{}, err
	}
	hyper := map[string]any{"arch": net.Arch}
	for k, v := range lin.Hyper {
		hyper[k] = v
	}
	m := checkpoint.Manifest{Model: MAIFSKind, Hyper: hyper, Env: env.MAIFSName, FeatureVersion: featureVersion(env.MAIFSSpec),
		DatasetHash: lin.DatasetHash, ConfigHash: lin.ConfigHash, CodeRevision: lin.CodeRevision, Parent: lin.Parent,
		Metrics: lin.Metrics, History: lin.History}
	return checkpoint.Write(dir, m)
}

// LoadMAIFS verifies dir and rebuilds its multi-agent network on dev; a checkpoint of another
// kind, or of another feature layout, is refused with what it is.
func LoadMAIFS(dir string, dev gotch.Device) (*MAIFSNet, checkpoint.Manifest, error) {
	m, err := checkpoint.Read(dir)
	if err != nil {
		return nil, m, err
	}
	if m.Model != MAIFSKind {
		return nil, m, fmt.Errorf("checkpoint %s: model %q for env %q, want a %s network (env %s)", dir, m.Model, m.Env, MAIFSKind, env.MAIFSName)
	}
	raw, ok := m.Hyper["arch"]
	if !ok {
		return nil, m, fmt.Errorf("checkpoint %s: manifest field hyper.arch: missing", dir)
	}
	data, err := json.Marshal(raw)
	if err != nil {
		return nil, m, fmt.Errorf("checkpoint %s: manifest field hyper.arch: %w", dir, err)
	}
	var arch MAIFSArch
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&arch); err != nil {
		return nil, m, fmt.Errorf("checkpoint %s: manifest field hyper.arch: %w", dir, err)
	}
	net, err := NewMAIFSNet(arch, dev)
	if err != nil {
		return nil, m, fmt.Errorf("checkpoint %s: %w", dir, err)
	}
	pinned(func() { err = net.VS.Load(filepath.Join(dir, checkpoint.ModelFile)) })
	if err != nil {
		return nil, m, fmt.Errorf("checkpoint %s: %s: %w", dir, checkpoint.ModelFile, err)
	}
	return net, m, nil
}
