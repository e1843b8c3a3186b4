package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/registry"
)

// pullInto pulls the version ref names into dest (every file's sha256 verified) within
// registry.deadline, the one deadline of every registry command; a stalled transfer fails
// sooner, by registry.s3.timeout.
func pullInto(ctx context.Context, cfg config.RegistryConfig, ref, dest string, force bool, log *slog.Logger) (registry.Version, error) {
	reg, err := registry.Open(cfg, log)
	if err != nil {
		return registry.Version{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Deadline)
	defer cancel()
	return reg.Pull(ctx, ref, dest, force)
}

// pullModel pulls a model's version into a new temporary folder (removed on error); the
// caller removes filepath.Dir of the folder when done. A model not published yet is named
// with the pipeline that publishes it.
func pullModel(ctx context.Context, cfg config.RegistryConfig, ref string, log *slog.Logger) (string, registry.Version, error) {
	tmp, err := os.MkdirTemp("", "schedrl-model-")
	if err != nil {
		return "", registry.Version{}, err
	}
	dir := filepath.Join(tmp, "model")
	v, err := pullInto(ctx, cfg, ref, dir, false, log)
	if err != nil {
		os.RemoveAll(tmp)
		return "", registry.Version{}, withModelHint(ref, fmt.Errorf("model %s: pull: %w", ref, err))
	}
	return dir, v, nil
}
