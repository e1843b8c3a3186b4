package registry

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
)

// Change is one field that differs between two versions; A or B is "" where absent.
type Change struct {
	Field string
	A, B  string
	Delta string // B-A for metrics present in both
}

// Diff lists the configuration, lineage and metric differences from a to b, in field order.
func Diff(a, b Version) []Change {
	var out []Change
	add := func(field, x, y, delta string) {
		if x != y {
			out = append(out, Change{Field: field, A: x, B: y, Delta: delta})
		}
	}
	ma, mb := a.Manifest, b.Manifest
	add("model", ma.Model, mb.Model, "")
	add("env", ma.Env, mb.Env, "")
	add("feature_version", strconv.Itoa(ma.FeatureVersion), strconv.Itoa(mb.FeatureVersion), "")
	add("dataset_hash", ma.DatasetHash, mb.DatasetHash, "")
	add("config_hash", ma.ConfigHash, mb.ConfigHash, "")
	add("code_revision", ma.CodeRevision, mb.CodeRevision, "")
	add("parent", ma.Parent, mb.Parent, "")
	for _, k := range unionKeys(ma.Hyper, mb.Hyper) {
		add("hyper."+k, show(ma.Hyper, k), show(mb.Hyper, k), "")
	}
	for _, k := range unionKeys(ma.Metrics, mb.Metrics) {
		x, okA := ma.Metrics[k]
		y, okB := mb.Metrics[k]
		delta := ""
		if okA && okB {
			delta = fmt.Sprintf("%+.6g", y-x)
		}
		add("metrics."+k, show(ma.Metrics, k), show(mb.Metrics, k), delta)
	}
	return out
}

func unionKeys[V any](a, b map[string]V) []string {
	keys := slices.Collect(maps.Keys(a))
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

func show[V any](m map[string]V, k string) string {
	v, ok := m[k]
	if !ok {
		return ""
	}
	if f, isFloat := any(v).(float64); isFloat {
		return fmt.Sprintf("%.6g", f)
	}
	return fmt.Sprint(v)
}
