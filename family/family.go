// Package family is the registry of schedrl's learning problems (placement, defrag,
// defrag-online, maifs, ...). A family registers once, under the name the config's
// finetune.env and datasets.env give, what the pipeline needs to learn it: its expert logs,
// its dataset builder, the files and config sections its cache keys cover and its eval
// section. The stages, commands and trainers ask this registry; none of them switches on a
// family's name.
//
// The training side of a family (behaviour cloning and PPO) links libtorch, which this package
// and the pipeline stages must not: pretrain and finetune keep it in Hooks of their own, keyed
// by the same names (docs/design.md, "How a family plugs in").
package family

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"

	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/pipeline"
)

// Family is what one learning problem gives the pipeline. Every field but Name may be nil:
// the stage that needs it then refuses the family by name.
type Family struct {
	// Name is the finetune.env (and, for its dataset, datasets.env) value.
	Name string
	// ExpertLogs makes the logs stage when datasets.logs names no logs: an expert's
	// decisions on training workloads.
	ExpertLogs func(config.Config) (pipeline.Stage, error)
	// Dataset builds the datasets stage's rows from the logs stage's decision logs.
	Dataset *Dataset
	// PretrainFiles are the reference files behaviour cloning reads beside the dataset, by
	// name: their content enters the pretrain key.
	PretrainFiles func(config.Config) map[string]string
	// Sections are the config sections the family's PPO episodes read beside finetune's:
	// they enter the fine-tune key.
	Sections func(config.Config) any
	// EvalSection, for a family that is also an eval.timed.kind, checks the eval section
	// against the family's world and returns the section the eval key covers.
	EvalSection func(config.Config) (any, error)
	// Evaluate, for a family whose world eval does not run, evaluates the eval section's
	// policies (cfg.Eval.Policies: heuristic names and ckpt:DIR checkpoints) on its held-out
	// workloads into cfg.Eval.Out, as a report eval.ReadReport reads. nil: eval runs the
	// arrival protocol or eval.timed.kind's world.
	Evaluate func(ctx context.Context, cfg config.Config, log *slog.Logger) error
}

// Dataset is a family's dataset builder.
type Dataset struct {
	// Key is what of the config, beyond the datasets section and seed, decides the rows
	// (nil key: nothing).
	Key func(config.Config) (any, error)
	// Build writes the dataset of the decision logs matching datasets.logs into datasets.out
	// (replacing it only with datasets.force) and reports it as the stage's metric.
	Build func(ctx context.Context, cfg config.Config, log *slog.Logger) (pipeline.Result, error)
}

// Summary is what a training run reports in its family's terms: the pipeline stage's metric
// and note, and the lines its command prints.
type Summary struct {
	Metric string
	Value  float64
	Note   string
	Lines  []string
}

var (
	mu       sync.RWMutex
	families = map[string]Family{}
)

// Register adds f, and its name to the config's finetune.env (and, with a Dataset,
// datasets.env) values; a second family of the same name is a programming error.
func Register(f Family) {
	mu.Lock()
	defer mu.Unlock()
	if f.Name == "" {
		panic("family: Register without a name")
	}
	if _, dup := families[f.Name]; dup {
		panic("family: " + f.Name + " registered twice")
	}
	families[f.Name] = f
	if !slices.Contains(config.FinetuneEnvs, f.Name) {
		config.FinetuneEnvs = append(config.FinetuneEnvs, f.Name)
	}
	if f.Dataset != nil && !slices.Contains(config.DatasetEnvs, f.Name) {
		config.DatasetEnvs = append(config.DatasetEnvs, f.Name)
	}
}

// Lookup returns the family registered as name; key is the config key that named it, for the
// error.
func Lookup(key, name string) (Family, error) {
	mu.RLock()
	defer mu.RUnlock()
	f, ok := families[name]
	if !ok {
		return Family{}, fmt.Errorf("%s: unknown family %q (registered: %v)", key, name, namesLocked(families))
	}
	return f, nil
}

// Get is the family registered as name, if any.
func Get(name string) (Family, bool) {
	mu.RLock()
	defer mu.RUnlock()
	f, ok := families[name]
	return f, ok
}

// Names lists the registered families whose field has selects them (nil: all), sorted.
func Names(has func(Family) bool) []string {
	mu.RLock()
	defer mu.RUnlock()
	sel := map[string]Family{}
	for n, f := range families {
		if has == nil || has(f) {
			sel[n] = f
		}
	}
	return namesLocked(sel)
}

func namesLocked[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// Hooks are one layer's per-family hooks, keyed by family name: the training packages keep
// theirs here because they link libtorch, which Family's users must not.
type Hooks[T any] struct {
	layer string
	mu    sync.RWMutex
	m     map[string]T
}

// NewHooks returns an empty set of hooks; layer names them in errors ("finetune").
func NewHooks[T any](layer string) *Hooks[T] {
	return &Hooks[T]{layer: layer, m: map[string]T{}}
}

// Register adds name's hook; a second one is a programming error.
func (h *Hooks[T]) Register(name string, v T) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, dup := h.m[name]; dup {
		panic("family: " + h.layer + " hook of " + name + " registered twice")
	}
	h.m[name] = v
}

// Lookup returns name's hook; key is the config key that named it, for the error.
func (h *Hooks[T]) Lookup(key, name string) (T, error) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	v, ok := h.m[name]
	if !ok {
		return v, fmt.Errorf("%s: %q: %s knows the families %v", key, name, h.layer, namesLocked(h.m))
	}
	return v, nil
}
