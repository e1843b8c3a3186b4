package config

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// leaf is one configurable key: a non-struct field somewhere under Config.
type leaf struct {
	index  []int
	typ    reflect.Type
	secret bool
}

func (lf leaf) get(root reflect.Value) reflect.Value    { return root.FieldByIndex(lf.index) }
func (lf leaf) set(root reflect.Value, v reflect.Value) { root.FieldByIndex(lf.index).Set(v) }

// schemaOf maps every dotted key ("sim.nodes") of struct type t to its leaf, and lists the
// keys that are sections (nested structs, even those without fields yet).
func schemaOf(t reflect.Type) (map[string]leaf, map[string]bool) {
	keys, sections := map[string]leaf{}, map[string]bool{}
	var walk func(t reflect.Type, prefix string, index []int)
	walk = func(t reflect.Type, prefix string, index []int) {
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			key := prefix + keyOf(f)
			idx := append(slices.Clone(index), i)
			if f.Type.Kind() == reflect.Struct && f.Type.PkgPath() == t.PkgPath() {
				sections[key] = true
				walk(f.Type, key+".", idx)
				continue
			}
			keys[key] = leaf{index: idx, typ: f.Type, secret: f.Tag.Get("secret") == "true"}
		}
	}
	walk(t, "", nil)
	return keys, sections
}

func keyOf(f reflect.StructField) string {
	if name, _, _ := strings.Cut(f.Tag.Get("mapstructure"), ","); name != "" {
		return name
	}
	return strings.ToLower(f.Name)
}

func sortedKeys(keys map[string]leaf) []string {
	out := make([]string, 0, len(keys))
	for k := range keys {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// checkFile rejects keys of a YAML config file that no section declares, and returns the
// position of every known key for later error messages.
func (l *loader) checkFile(data []byte) (map[string]string, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("config %s: %w", l.path, err)
	}
	pos := map[string]string{}
	if len(doc.Content) == 0 {
		return pos, nil
	}
	var errs []error
	var walk func(n *yaml.Node, prefix string)
	walk = func(n *yaml.Node, prefix string) {
		if n.Kind != yaml.MappingNode {
			where := strings.TrimSuffix(prefix, ".")
			if where == "" {
				where = "top level"
			}
			errs = append(errs, fmt.Errorf("%s:%d:%d: %s: want a mapping of keys", l.path, n.Line, n.Column, where))
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			key := prefix + k.Value
			at := fmt.Sprintf("%s:%d:%d", l.path, k.Line, k.Column)
			switch {
			case l.isLeaf(key):
				pos[key] = at
			case l.sections[key]:
				if v.Tag != "!!null" { // "sim:" with nothing under it is an empty section
					walk(v, key+".")
				}
			default:
				errs = append(errs, fmt.Errorf("%s: unknown key %q%s", at, key, l.suggest(key)))
			}
		}
	}
	walk(doc.Content[0], "")
	return pos, errors.Join(errs...)
}

func (l *loader) isLeaf(key string) bool { _, ok := l.keys[key]; return ok }

// suggest names the closest known key when a misspelling is likely.
func (l *loader) suggest(key string) string {
	best, bestDist := "", 3
	for _, k := range sortedKeys(l.keys) {
		if d := editDistance(key, k); d < bestDist {
			best, bestDist = k, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
