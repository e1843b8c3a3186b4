package eval

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// PolicyKind says where a policy reference points.
type PolicyKind string

const (
	Heuristic  PolicyKind = "heuristic"  // a name from package policy (fgd, bestfit, ...)
	Checkpoint PolicyKind = "checkpoint" // ckpt:DIR, a checkpoint directory
	Registry   PolicyKind = "registry"   // MODEL@VERSION or MODEL@ALIAS in the model registry
)

// PolicyRef is one parsed --policies entry.
type PolicyRef struct {
	Raw  string     // as the user wrote it; the key in every output
	Kind PolicyKind //
	Name string     // heuristic name, or registry model name
	Dir  string     // checkpoint directory
	Tag  string     // registry version number or alias
}

// ParsePolicyRef classifies a reference without resolving it: "ckpt:DIR" is a checkpoint,
// "MODEL@VERSION|ALIAS" a registry entry, anything else a heuristic name.
func ParsePolicyRef(s string) (PolicyRef, error) {
	raw := strings.TrimSpace(s)
	ref := PolicyRef{Raw: raw}
	switch {
	case raw == "":
		return ref, fmt.Errorf("policy reference is empty")
	case strings.HasPrefix(raw, "ckpt:"):
		ref.Kind, ref.Dir = Checkpoint, strings.TrimPrefix(raw, "ckpt:")
		if ref.Dir == "" {
			return ref, fmt.Errorf("policy %q: ckpt: needs a directory", raw)
		}
	case strings.Contains(raw, "@"):
		name, tag, _ := strings.Cut(raw, "@")
		if name == "" || tag == "" || strings.Contains(tag, "@") {
			return ref, fmt.Errorf("policy %q: registry references are MODEL@VERSION or MODEL@ALIAS", raw)
		}
		ref.Kind, ref.Name, ref.Tag = Registry, name, tag
	default:
		ref.Kind, ref.Name = Heuristic, strings.ToLower(raw)
	}
	return ref, nil
}

// TraceRef is one parsed --traces entry.
type TraceRef struct {
	Name string // short name used in outputs: "default", "gpushare40", or the file's base name
	Path string // the openb pod list CSV
}

const podListPrefix = "openb_pod_list_"

// ParseTraceRef turns an openb short name (default, gpushare40, ...) into
// DIR/openb_pod_list_NAME.csv, or takes a path (anything with a separator or a .csv suffix).
// It checks the file exists so that a typo fails before any work starts.
func ParseTraceRef(s, tracesDir string) (TraceRef, error) {
	raw := strings.TrimSpace(s)
	if raw == "" {
		return TraceRef{}, fmt.Errorf("trace reference is empty")
	}
	ref := TraceRef{Path: raw}
	if !strings.ContainsRune(raw, os.PathSeparator) && !strings.HasSuffix(raw, ".csv") {
		ref.Path = filepath.Join(tracesDir, podListPrefix+raw+".csv")
	}
	ref.Name = strings.TrimPrefix(strings.TrimSuffix(filepath.Base(ref.Path), ".csv"), podListPrefix)
	if _, err := os.Stat(ref.Path); err != nil {
		return ref, fmt.Errorf("trace %q: %w", raw, err)
	}
	return ref, nil
}
