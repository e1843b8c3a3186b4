// Package pipeline runs schedrl's stage graph (logs -> datasets -> pretrain -> finetune ->
// eval -> publish) like make or DVC: each stage's key is a hash of its config section, its
// inputs' content hashes and the code revision, and a stage whose key already has a complete
// output is skipped. Outputs are built in a partial directory and renamed into place with their
// completion record, so an interrupted run (even kill -9) resumes where it stopped.
//
// The package knows stages only through the Stage interface, so it builds without cgo; the
// adapters that call the real stage packages live in pipeline/stages.
package pipeline

import (
	"context"
	"log/slog"
)

// Stage is one step of the graph. Its output is one directory.
type Stage interface {
	// Name identifies the stage in keys, flags and records (e.g. "datasets").
	Name() string
	// Inputs names the upstream stages whose outputs Run reads; they must come earlier.
	Inputs() []string
	// Config is the stage's config section; its JSON encoding enters the key.
	Config() any
	// Run builds the output in env.OutDir. It returns the key metric for the summary.
	Run(ctx context.Context, env Env) (Result, error)
}

// Resumable is implemented by stages that can continue from the partial output of an
// interrupted run with the same key (finetune from its last checkpoint). Other stages start
// from an empty directory every time.
type Resumable interface {
	Resumable() bool
}

// External is implemented by stages whose work also lives outside their output directory
// (publish: a registry version). A cached output counts as done only while Missing finds that
// outside copy; when it is gone the stage runs again, so deleting the registry and rerunning
// publishes again instead of trusting a stale cache of the outside world.
type External interface {
	// Missing says what the completed output out recorded is no longer there ("" when
	// everything is). An error (the outside store unreachable) fails the run.
	Missing(ctx context.Context, out Output) (string, error)
}

// Env is what a stage run is handed.
type Env struct {
	Inputs   map[string]Output // upstream outputs by stage name
	Upstream map[string]Output // every output of the run complete so far, by stage: lineage
	OutDir   string            // write the output here; committed after Run succeeds
	Resumed  bool              // OutDir holds an interrupted run's partial output
	Progress Progress
	Terminal bool // stderr is a terminal: a package with its own progress bar may draw it
	Log      *slog.Logger
}

// Output is a completed stage output.
type Output struct {
	Stage string `json:"stage"`
	Key   string `json:"key"`
	Dir   string `json:"dir"`
	Hash  string `json:"hash"` // content hash of every file under Dir
}

// Result is what a stage reports besides its files.
type Result struct {
	Metric *Metric `json:"metric,omitempty"` // shown in the summary table
	Note   string  `json:"note,omitempty"`   // e.g. the champion gate's decision
}

// Metric is a stage's key number.
type Metric struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
}
