package eval

import (
	"errors"
	"fmt"

	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/sim"
)

// timelines is what the defrag-online and drr kinds run their policies on: the cluster and
// eval.traces' pod lists, one workload each.
type timelines struct {
	nodes []sim.Node
	pods  []podList
}

func loadTimelines(cfg config.EvalConfig) (timelines, error) {
	nodes, err := sim.LoadNodes(cfg.Nodes)
	if err != nil {
		return timelines{}, fmt.Errorf("nodes %q: %w", cfg.Nodes, err)
	}
	pods, err := loadPodLists(cfg)
	if err != nil {
		return timelines{}, err
	}
	return timelines{nodes: nodes, pods: pods}, nil
}

func (t timelines) workloads() []string {
	names := make([]string, len(t.pods))
	for i, p := range t.pods {
		names[i] = p.ref.Name
	}
	return names
}

// parseTimedPolicies parses eval.policies for a kind whose learned policies resolve later: a
// checkpoint folder must exist, a registry reference is checked when resolved, and any other
// name must pass heuristic (the kind's constructor by name).
func parseTimedPolicies(policies []string, heuristic func(name string) error) ([]PolicyRef, error) {
	var refs []PolicyRef
	for _, s := range policies {
		ref, err := ParsePolicyRef(s)
		if err != nil {
			return nil, err
		}
		switch ref.Kind {
		case Checkpoint:
			if err := fileExists(fmt.Sprintf("policy %q: checkpoint", ref.Raw), ref.Dir); err != nil {
				return nil, err
			}
		case Registry:
		default:
			if err := heuristic(ref.Name); err != nil {
				return nil, fmt.Errorf("policy %q: %w", ref.Raw, err)
			}
		}
		refs = append(refs, ref)
	}
	return refs, nil
}

// timelinesKind is what the defrag-online and drr kinds share as kinds: their workloads are
// eval.traces' pod lists by name.
type timelinesKind struct{}

func (timelinesKind) workloadName(raw, tracesDir string) (string, error) {
	ref, err := ParseTraceRef(raw, tracesDir)
	return ref.Name, err
}

// checkTimelines checks what every timelines kind reads: sec (missing is the error when it is
// absent) and the offered load (eval.timed.load). Errors name the key.
func checkTimelines(cfg config.EvalConfig, sec *config.DefragOnlineConfig, missing, kind string) error {
	if sec == nil {
		return errors.New(missing)
	}
	if err := sec.Validate(); err != nil {
		return fmt.Errorf("defrag_online.%w", err)
	}
	if l := cfg.Timed.Load; !(l > 0 && l <= 10) {
		return fmt.Errorf("timed.load: the %s timelines need an offered load in (0, 10], got %v", kind, l)
	}
	return nil
}
