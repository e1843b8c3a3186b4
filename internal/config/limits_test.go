package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// Every float key refuses NaN and ±Inf, naming the key and where the value came from; a
// config file of tens of MB is refused by its size before it is parsed (issue 34, classes 1
// and 2).
func TestNonFiniteValuesAndHugeFiles(t *testing.T) {
	keys, _ := schemaOf(reflect.TypeFor[Config]())
	floats := 0
	for key, lf := range keys {
		k := lf.typ.Kind()
		if k == reflect.Slice {
			k = lf.typ.Elem().Kind()
		}
		if k != reflect.Float64 && k != reflect.Float32 {
			continue
		}
		floats++
		for _, v := range []string{"NaN", "+Inf", "-Inf"} {
			_, err := Load("", flagSet(t, "--set", key+"="+v))
			if err == nil || !strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "flag --set "+key+"="+v) {
				t.Errorf("--set %s=%s: error %v, want one naming the key and the flag", key, v, err)
			}
		}
	}
	if floats < 10 {
		t.Fatalf("only %d float keys found", floats)
	}
	path := filepath.Join(t.TempDir(), "huge.yaml")
	body := "seed: 1\n# " + strings.Repeat("x", 20<<20) + "\n"
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path, flagSet(t)); err == nil || !strings.Contains(err.Error(), path+": 20 MiB, over the limit (a config file may have at most 1 MiB)") {
		t.Errorf("20 MiB config: %v", err)
	}
	if _, err := Load("/dev/zero", flagSet(t)); err == nil || !strings.Contains(err.Error(), "/dev/zero: more than 1 MiB") {
		t.Errorf("/dev/zero as config: %v", err)
	}
}
