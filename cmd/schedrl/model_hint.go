package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/schedrl/schedrl/registry"
)

// withModelHint adds to a registry miss of a pipeline's model the command that publishes it.
func withModelHint(ref string, err error) error {
	if err == nil || !(errors.Is(err, registry.ErrNotFound) || errors.Is(err, registry.ErrNoStore)) {
		return err
	}
	name, _, _ := strings.Cut(ref, "@")
	cfg, ok := registry.PipelineConfig(name)
	if !ok {
		return err
	}
	return fmt.Errorf("%w: model %s is published by its pipeline; run `make pipeline CONFIG=%s` first (with the same registry.store), or pass a checkpoint directory", err, name, cfg)
}
