package registry

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
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
	ha, hb := FlattenHyper(ma.Hyper), FlattenHyper(mb.Hyper)
	for _, k := range unionKeys(ha, hb) {
		add("hyper."+k, ha[k], hb[k], "")
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

// FlattenHyper lists hyper-parameters one leaf per key, nested sections joined with "." as
// YAML paths (pretrain.lr), so that a section prints as its keys, not as one Go map string.
func FlattenHyper(h map[string]any) map[string]string {
	out := map[string]string{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		if m, ok := v.(map[string]any); ok && len(m) > 0 {
			for k, x := range m {
				walk(prefix+"."+k, x)
			}
			return
		}
		out[strings.TrimPrefix(prefix, ".")] = leaf(v)
	}
	walk("", h)
	return out
}

func leaf(v any) string {
	switch x := v.(type) {
	case float64:
		return strconv.FormatFloat(x, 'g', 6, 64)
	case string:
		return x
	}
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(data)
}
