// Package executor runs N shards of a schedrl command and returns their parts: in this
// process (Local, today's behaviour), or as a Kubernetes Indexed Job (Kubernetes) whose pods
// run `schedrl <stage> ... --shard I/N --part KEY` and write their parts to the registry's
// object store, content-addressed. The caller merges the parts into what one process gives.
package executor

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/schedrl/schedrl/internal/config"
)

// Work is Shards shards of one command.
type Work struct {
	Name   string // the stage ("eval", "logs"): names the Job and the log lines
	Shards int
	// Local runs shard i in this process and returns its part.
	Local func(ctx context.Context, shard int) ([]byte, error)
	// Args are the schedrl arguments of every shard's pod, to which the kubernetes executor
	// adds --shard INDEX/N and --part KEY (the pod writes its part to the store under KEY).
	Args []string
	// Progress, when set, is told the shards done so far (after each change); otherwise the
	// kubernetes executor logs a line at each change.
	Progress func(done, total int)
}

// Executor runs work and returns its parts in shard order, or an error that names the
// failed shards.
type Executor interface {
	Run(ctx context.Context, w Work) ([][]byte, error)
}

// New returns the executor cfg names; store is the registry config the kubernetes executor's
// pods write their parts to.
func New(cfg config.ExecutorConfig, store config.RegistryConfig, log *slog.Logger) (Executor, error) {
	if cfg.Kind == "kubernetes" {
		return NewKubernetes(cfg, store, log)
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("pipeline.%w", err)
	}
	return &Local{Parallelism: cfg.Parallelism}, nil
}
