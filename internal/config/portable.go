package config

import (
	"reflect"
	"strings"
)

// Portable is cfg as another machine of the same image loads it: every repository file key
// (data/..., configs/...) that Load resolved to this binary's copy of its default is the
// default again, which the other machine resolves to its own copy.
func Portable(cfg Config) Config {
	keys, _ := schemaOf(reflect.TypeFor[Config]())
	def := reflect.ValueOf(Default())
	root := reflect.ValueOf(&cfg).Elem()
	for _, lf := range keys {
		if lf.typ.Kind() != reflect.String {
			continue
		}
		d := lf.get(def).String()
		if !(strings.HasPrefix(d, "data/") || strings.HasPrefix(d, "configs/")) {
			continue
		}
		if v := lf.get(root).String(); v != d && v == RepoFile(d) {
			lf.get(root).SetString(d)
		}
	}
	return cfg
}
