package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/schedrl/schedrl/registry"
)

// modelPipelines name the pipeline config that publishes each model README.md uses, so a
// reference to one not published yet says what to run.
var modelPipelines = map[string]string{
	"placement": "configs/default.yaml",
	"defrag":    "configs/defrag-online.yaml",
	"maifs":     "configs/maifs.yaml",
}

// withModelHint adds to a registry miss of a pipeline's model the command that publishes it.
func withModelHint(ref string, err error) error {
	if err == nil || !(errors.Is(err, registry.ErrNotFound) || errors.Is(err, registry.ErrNoStore)) {
		return err
	}
	name, _, _ := strings.Cut(ref, "@")
	cfg, ok := modelPipelines[name]
	if !ok {
		return err
	}
	return fmt.Errorf("%w: model %s is published by its pipeline; run `make pipeline CONFIG=%s` first (with the same registry.store), or pass a checkpoint directory", err, name, cfg)
}
