package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
)

// resolveRepoFiles points defaults that name a repository file (data/..., configs/...) at the
// binary's copy when the working folder has none: those paths are relative to a checkout, and
// a binary run from elsewhere finds its checkout beside itself (the image keeps data/ next to
// the binary) or one folder up (bin/schedrl). Only values equal to the built-in default move:
// a path the user wrote means what it says.
func resolveRepoFiles(cfg *Config, keys map[string]leaf, exe string) {
	if exe == "" {
		return
	}
	if p, err := filepath.EvalSymlinks(exe); err == nil {
		exe = p
	}
	dirs := []string{filepath.Dir(exe), filepath.Dir(filepath.Dir(exe))}
	def := reflect.ValueOf(Default())
	root := reflect.ValueOf(cfg).Elem()
	for _, lf := range keys {
		if lf.typ.Kind() != reflect.String {
			continue
		}
		v := lf.get(root).String()
		if v != lf.get(def).String() || !(strings.HasPrefix(v, "data/") || strings.HasPrefix(v, "configs/")) {
			continue
		}
		lf.get(root).SetString(repoFile(v, dirs))
	}
}

// RepoFile is a command's default path that names a repository file (data/..., configs/...),
// resolved as the config's defaults are: as given when the working folder has it, else the
// binary's copy when there is one, else as given (the command's error then names it).
func RepoFile(path string) string {
	if !(strings.HasPrefix(path, "data/") || strings.HasPrefix(path, "configs/")) {
		return path
	}
	exe := executable()
	if exe == "" {
		return path
	}
	if p, err := filepath.EvalSymlinks(exe); err == nil {
		exe = p
	}
	return repoFile(path, []string{filepath.Dir(exe), filepath.Dir(filepath.Dir(exe))})
}

func repoFile(path string, dirs []string) string {
	if exists(path) {
		return path
	}
	for _, d := range dirs {
		if p := filepath.Join(d, path); exists(p) {
			return p
		}
	}
	return path
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// executable is the running binary's path, "" when the system cannot say.
func executable() string {
	p, err := os.Executable()
	if err != nil {
		return ""
	}
	return p
}

// DefaultKeys lists the keys whose built-in default is path ("sim.nodes" for the openb node
// list), for an error that says which key to set when that file is missing.
func DefaultKeys(path string) []string {
	keys, _ := schemaOf(reflect.TypeFor[Config]())
	def := reflect.ValueOf(Default())
	var out []string
	for _, key := range sortedKeys(keys) {
		if lf := keys[key]; lf.typ.Kind() == reflect.String && lf.get(def).String() == path {
			out = append(out, key)
		}
	}
	return out
}
