package config

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"reflect"
	"slices"
	"strings"

	"github.com/go-viper/mapstructure/v2"
	"github.com/schedrl/schedrl/internal/inputfile"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"
	"go.yaml.in/yaml/v3"
)

// EnvPrefix starts every environment override: SCHEDRL_SIM_NODES sets sim.nodes.
const EnvPrefix = "SCHEDRL"

// Flag names that AddFlags registers and Load reads.
const (
	ConfigFlag = "config"
	SetFlag    = "set"
)

// AddFlags registers --config FILE and the repeatable --set key=value override.
func AddFlags(flags *pflag.FlagSet, defaultPath string) {
	flags.StringP(ConfigFlag, "c", defaultPath, "YAML config file (empty: built-in defaults only)")
	flags.StringArray(SetFlag, nil, "override one config key, e.g. --set seed=7 (repeatable)")
}

// Default returns the built-in configuration: every section's SetDefaults applied.
func Default() Config {
	cfg := Config{Seed: 1}
	forEachSection(&cfg, func(_ string, s reflect.Value) {
		if d, ok := s.Addr().Interface().(interface{ SetDefaults() }); ok {
			d.SetDefaults()
		}
	})
	return cfg
}

// Validate runs every section's Validate; the error names the section and key.
func (c Config) Validate() error {
	var errs []error
	forEachSection(&c, func(name string, s reflect.Value) {
		if v, ok := s.Interface().(interface{ Validate() error }); ok {
			if err := v.Validate(); err != nil {
				errs = append(errs, fmt.Errorf("%s.%w", name, err))
			}
		}
	})
	return errors.Join(errs...)
}

// Load builds the effective configuration: built-in defaults, then the YAML file at path (if
// not empty), then SCHEDRL_SECTION_KEY environment variables, then flags. A flag applies when
// its name is a key ("seed", "sim.nodes") or through --set key=value (see AddFlags).
// Unknown keys, values of the wrong type and values a section's Validate rejects are errors
// naming the key and where it came from.
func Load(path string, flags *pflag.FlagSet) (Config, error) {
	keys, sections := schemaOf(reflect.TypeFor[Config]())
	l := loader{keys: keys, sections: sections, v: viper.New(), path: path}
	if err := l.layer(flags); err != nil {
		return Config{}, err
	}
	cfg, err := l.decode()
	if err != nil {
		return Config{}, err
	}
	resolveRepoFiles(&cfg, l.keys, executable())
	if err := cfg.Validate(); err != nil {
		return Config{}, l.located(err)
	}
	return cfg, nil
}

type loader struct {
	keys     map[string]leaf
	sections map[string]bool
	v        *viper.Viper
	path     string
	filePos  map[string]string // key -> "file:line:col"
	flagSrc  map[string]string // key -> "flag --x"
}

func (l *loader) layer(flags *pflag.FlagSet) error {
	defaults := Default()
	for key, lf := range l.keys {
		l.v.SetDefault(key, lf.get(reflect.ValueOf(defaults)).Interface())
	}
	if l.path != "" {
		data, err := inputfile.ReadFile(l.path, inputfile.Config)
		if err != nil {
			return fmt.Errorf("config: %w", err)
		}
		if l.filePos, err = l.checkFile(data); err != nil {
			return err
		}
		l.v.SetConfigType("yaml")
		if err := l.v.ReadConfig(bytes.NewReader(data)); err != nil {
			return fmt.Errorf("config %s: %w", l.path, err)
		}
	}
	if err := l.checkEnv(); err != nil {
		return err
	}
	l.v.SetEnvPrefix(EnvPrefix)
	l.v.SetEnvKeyReplacer(strings.NewReplacer(".", "_"))
	l.v.AutomaticEnv()
	return l.bindFlags(flags)
}

// otherEnv are the SCHEDRL_ variables that are not config keys.
var otherEnv = map[string]bool{
	"SCHEDRL_DEPS":        true, // the setup's install folder (internal/testserver)
	"SCHEDRL_TEST_AS_CLI": true, // a test binary runs as the schedrl command (cmd/schedrl tests)
}

func envName(key string) string {
	return EnvPrefix + "_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// checkEnv refuses a SCHEDRL_ variable that names no key, as a misspelled file key is refused.
func (l *loader) checkEnv() error {
	known := map[string]bool{}
	for key := range l.keys {
		known[envName(key)] = true
	}
	var errs []error
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, EnvPrefix+"_") || known[name] || otherEnv[name] {
			continue
		}
		closest, best := "", 3
		for _, key := range slices.Sorted(maps.Keys(known)) {
			if d := editDistance(name, key); d < best {
				closest, best = key, d
			}
		}
		hint := ""
		if closest != "" {
			hint = fmt.Sprintf(" (did you mean %s?)", closest)
		}
		errs = append(errs, fmt.Errorf("config: env %s names no config key%s", name, hint))
	}
	return errors.Join(errs...)
}

func (l *loader) bindFlags(flags *pflag.FlagSet) error {
	l.flagSrc = map[string]string{}
	if flags == nil {
		return nil
	}
	var err error
	flags.VisitAll(func(f *pflag.Flag) {
		if _, ok := l.keys[f.Name]; ok && err == nil {
			err = l.v.BindPFlag(f.Name, f)
			if f.Changed {
				l.flagSrc[f.Name] = "flag --" + f.Name
			}
		}
	})
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	sets, _ := flags.GetStringArray(SetFlag)
	for _, kv := range sets {
		key, value, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("config: flag --%s %q: want key=value", SetFlag, kv)
		}
		if _, known := l.keys[key]; !known {
			return fmt.Errorf("config: flag --%s: unknown key %q%s", SetFlag, key, l.suggest(key))
		}
		list, err := listValue(l.keys[key], value)
		if err != nil {
			return fmt.Errorf("config: flag --%s %s: %w", SetFlag, kv, err)
		}
		l.v.Set(key, list)
		l.flagSrc[key] = fmt.Sprintf("flag --%s %s", SetFlag, kv)
	}
	return nil
}

// listValue reads a --set value for a list key in either form, a,b or [a, b] (YAML's flow
// sequence, quotes allowed); other keys keep the string.
func listValue(lf leaf, value string) (any, error) {
	if lf.typ.Kind() != reflect.Slice {
		return value, nil
	}
	v := strings.TrimSpace(value)
	if !strings.HasPrefix(v, "[") {
		return value, nil
	}
	var items []string
	if err := yaml.Unmarshal([]byte(v), &items); err != nil {
		return nil, fmt.Errorf("want a,b or [a, b]: %v", err)
	}
	return items, nil
}

// decode converts every key on its own, so a bad value is reported with its key and source.
func (l *loader) decode() (Config, error) {
	var cfg Config
	root := reflect.ValueOf(&cfg).Elem()
	var errs []error
	for _, key := range sortedKeys(l.keys) {
		lf := l.keys[key]
		dst := reflect.New(lf.typ)
		dec, err := mapstructure.NewDecoder(&mapstructure.DecoderConfig{
			Result:           dst.Interface(),
			WeaklyTypedInput: true,
			ErrorUnused:      true,
			DecodeHook: mapstructure.ComposeDecodeHookFunc(
				mapstructure.StringToTimeDurationHookFunc(),
				mapstructure.StringToSliceHookFunc(","),
			),
		})
		if err == nil {
			err = dec.Decode(l.v.Get(key))
		}
		if err == nil {
			err = finite(dst.Elem())
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("config: %s (from %s): %w", key, l.source(key), unwrapDecode(err)))
			continue
		}
		lf.set(root, dst.Elem())
	}
	return cfg, errors.Join(errs...)
}

// finite refuses NaN and ±Inf in a float key or list: no key means them, and arithmetic on
// them ends in silent nonsense (a mean JCT of 0) rather than an error.
func finite(v reflect.Value) error {
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		if x := v.Float(); math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("%v is not a finite number", x)
		}
	case reflect.Slice:
		for i := range v.Len() {
			if err := finite(v.Index(i)); err != nil {
				return fmt.Errorf("item %d: %w", i+1, err)
			}
		}
	}
	return nil
}

// source says where the effective value of key came from, for error messages.
func (l *loader) source(key string) string {
	if s, ok := l.flagSrc[key]; ok {
		return s
	}
	env := EnvPrefix + "_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
	if os.Getenv(env) != "" {
		return "env " + env
	}
	if pos, ok := l.filePos[key]; ok {
		return pos
	}
	return "built-in default"
}

// located adds the source to validation errors of the form "section.key: ...".
func (l *loader) located(err error) error {
	var msgs []string
	for _, e := range unjoin(err) {
		msg := e.Error()
		key := strings.SplitN(msg, ":", 2)[0]
		if _, ok := l.keys[key]; ok {
			msg = fmt.Sprintf("%s (from %s)", msg, l.source(key))
		}
		msgs = append(msgs, "config: invalid "+msg)
	}
	return errors.New(strings.Join(msgs, "\n"))
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// unwrapDecode drops mapstructure's "decoding failed due to..." framing around a leaf error.
func unwrapDecode(err error) error {
	var de *mapstructure.DecodeError
	if errors.As(err, &de) {
		return de.Unwrap()
	}
	return err
}

// forEachSection calls fn with each struct-typed field of cfg (a section) and its key.
func forEachSection(cfg *Config, fn func(name string, section reflect.Value)) {
	v := reflect.ValueOf(cfg).Elem()
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if f.Type.Kind() == reflect.Struct {
			fn(keyOf(f), v.Field(i))
		}
	}
}
