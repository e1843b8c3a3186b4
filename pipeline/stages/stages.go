// Package stages adapts schedrl's stage packages (sim, datasets, pretrain, finetune, eval,
// registry) to pipeline.Stage. Each adapter takes its config section, hands the pipeline the
// part of it that decides the output (paths and parallelism are left out of keys), and runs
// the package into the directory the pipeline gives it.
package stages

import (
	"fmt"
	"slices"

	"github.com/schedrl/schedrl/eval"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/pipeline"
	"github.com/schedrl/schedrl/registry"
)

// Deps are what the command layer links in: the parts that load networks (libtorch) or talk
// to the registry, so that this package builds without cgo. Build refuses a selected stage
// whose field is nil.
type Deps struct {
	// ResolvePolicy resolves eval policy references, checkpoints included; Learned the timed
	// eval kinds' checkpoints.
	ResolvePolicy eval.Resolver
	Learned       eval.Learned
	// Pretrain and Finetune run the training stages.
	Pretrain, Finetune TrainFunc

	registry *registry.Registry // opened by Build from the registry section
}

// Build returns the pipeline cfg.Pipeline.Stages selects.
func Build(cfg config.Config, d Deps) (*pipeline.Pipeline, error) {
	if err := cfg.Pipeline.Validate(); err != nil {
		return nil, fmt.Errorf("pipeline.%w", err)
	}
	if slices.Contains(cfg.Pipeline.Stages, "eval") || slices.Contains(cfg.Pipeline.Stages, "publish") {
		reg, err := registry.Open(cfg.Registry, nil)
		if err != nil {
			return nil, err
		}
		d.registry = reg
	}
	var list []pipeline.Stage
	for _, name := range cfg.Pipeline.Stages {
		s, err := newStage(name, cfg, d)
		if err != nil {
			return nil, err
		}
		if got, want := s.Inputs(), config.PipelineInputs(name); !slices.Equal(got, want) {
			return nil, fmt.Errorf("stage %s reads %v, the config's graph says %v", name, got, want)
		}
		list = append(list, s)
	}
	return pipeline.New(list...)
}

func newStage(name string, cfg config.Config, d Deps) (pipeline.Stage, error) {
	switch name {
	case "logs":
		return newLogs(cfg)
	case "datasets":
		return newDatasets(cfg)
	case "pretrain":
		return newPretrain(cfg, d.Pretrain)
	case "finetune":
		return newFinetune(cfg, d.Finetune)
	case "eval":
		return newEval(cfg, d)
	case "publish":
		return newPublish(cfg, d.registry)
	}
	return nil, fmt.Errorf("unknown stage %q", name)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
