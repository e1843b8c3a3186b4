package config

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// SetArgs are the keys of c under prefixes (a section such as "defrag_online", or one key such
// as "finetune.nodes") whose values differ from the defaults, as --set flags: what a pod's
// command carries of the driver's config. A default stays unsaid, so a path resolves against
// the pod's own image (data/ beside the binary); a secret key is never said (pods read
// secrets from their environment).
func SetArgs(c Config, prefixes ...string) ([]string, error) {
	keys, _ := schemaOf(reflect.TypeFor[Config]())
	root, def := reflect.ValueOf(c), reflect.ValueOf(Default())
	var args []string
	for _, key := range sortedKeys(keys) {
		if !underAny(key, prefixes) || keys[key].secret {
			continue
		}
		v, d := keys[key].get(root), keys[key].get(def)
		if reflect.DeepEqual(v.Interface(), d.Interface()) || (v.Kind() == reflect.String && v.String() == RepoFile(d.String())) {
			continue
		}
		s, err := setValue(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		args = append(args, "--"+SetFlag, key+"="+s)
	}
	return args, nil
}

func underAny(key string, prefixes []string) bool {
	for _, p := range prefixes {
		if key == p || strings.HasPrefix(key, p+".") {
			return true
		}
	}
	return false
}

// setValue writes v as --set reads it back: a list in YAML's flow form (JSON strings), so
// an item with a comma stays one item.
func setValue(v reflect.Value) (string, error) {
	if v.Kind() != reflect.Slice {
		return scalar(v)
	}
	items := make([]string, v.Len())
	for i := range items {
		s, err := scalar(v.Index(i))
		if err != nil {
			return "", err
		}
		items[i] = s
	}
	data, err := json.Marshal(items)
	return string(data), err
}

func scalar(v reflect.Value) (string, error) {
	if d, ok := v.Interface().(time.Duration); ok {
		return d.String(), nil
	}
	switch v.Kind() {
	case reflect.String:
		return v.String(), nil
	case reflect.Bool:
		return strconv.FormatBool(v.Bool()), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.FormatUint(v.Uint(), 10), nil
	case reflect.Float32, reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64), nil
	}
	return "", fmt.Errorf("a %s value has no --%s form", v.Type(), SetFlag)
}
