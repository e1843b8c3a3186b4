package config

import (
	"bytes"
	"fmt"
	"reflect"

	"go.yaml.in/yaml/v3"
)

// Redacted is what Show prints in place of a non-empty secret.
const Redacted = "***"

// Show renders cfg as YAML in declaration order, secrets (fields tagged `secret:"true"`)
// replaced by Redacted.
func Show(cfg Config) ([]byte, error) {
	n, err := yamlNode(reflect.ValueOf(cfg))
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(n); err != nil {
		return nil, err
	}
	return buf.Bytes(), enc.Close()
}

func yamlNode(v reflect.Value) (*yaml.Node, error) {
	if v.Kind() != reflect.Struct || v.Type().PkgPath() != reflect.TypeFor[Config]().PkgPath() {
		var n yaml.Node
		if err := n.Encode(v.Interface()); err != nil {
			return nil, fmt.Errorf("config: show %s: %w", v.Type(), err)
		}
		return &n, nil
	}
	m := &yaml.Node{Kind: yaml.MappingNode}
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if !f.IsExported() {
			continue
		}
		field := v.Field(i)
		if f.Tag.Get("secret") == "true" && !field.IsZero() {
			field = reflect.ValueOf(Redacted)
		}
		val, err := yamlNode(field)
		if err != nil {
			return nil, err
		}
		m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: keyOf(f)}, val)
	}
	return m, nil
}
