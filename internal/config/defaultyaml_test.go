package config

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// configs/default.yaml (make pipeline) differs from the built-in defaults (a command without
// --config) in exactly the keys its "# differs:" line names: a new difference is documented
// there, or removed.
func TestDefaultYAMLDiffersOnlyWhereDocumented(t *testing.T) {
	path := filepath.Join("..", "..", "configs", "default.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^# differs: (.*)$`).FindStringSubmatch(string(data))
	if m == nil {
		t.Fatalf("%s: no \"# differs:\" line", path)
	}
	var documented []string
	for _, k := range strings.Split(m[1], ",") {
		documented = append(documented, strings.TrimSpace(k))
	}
	cfg, err := Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	keys, _ := schemaOf(reflect.TypeFor[Config]())
	def := reflect.ValueOf(Default())
	var differ []string
	for _, key := range sortedKeys(keys) {
		lf := keys[key]
		if !reflect.DeepEqual(lf.get(reflect.ValueOf(cfg)).Interface(), lf.get(def).Interface()) {
			differ = append(differ, key)
		}
	}
	slices.Sort(documented)
	if !slices.Equal(differ, documented) {
		t.Fatalf("%s differs from the built-in defaults in %v; its \"# differs:\" line says %v", path, differ, documented)
	}
}
