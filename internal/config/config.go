// Package config loads schedrl's viper YAML configuration: built-in defaults, then the file,
// then SCHEDRL_SECTION_KEY environment variables, then flags. Unknown keys are errors.
//
// Each pipeline stage owns one section, defined in its own file of this package
// (sim.go, datasets.go, ...) with its defaults and validation. Adding a section is one field in
// Config; the loader finds the rest through these methods on the section type:
//
//	func (c *SimConfig) SetDefaults()   // fills the built-in defaults into the zero value
//	func (c SimConfig) Validate() error // first invalid field, named by its key: "nodes: must be > 0, got -3"
//
// Keys come from `mapstructure` tags (use the same name in the `yaml` tag); a field tagged
// `secret:"true"` is printed as "***" by Show. A section that points at network services also
// implements `Endpoints() []Endpoint`, so `schedrl doctor` checks they can be reached.
package config

import "reflect"

// Config is the whole effective configuration; one field per stage section.
type Config struct {
	Seed     int64          `mapstructure:"seed" yaml:"seed"`
	Device   DeviceConfig   `mapstructure:"device" yaml:"device"`
	Sim      SimConfig      `mapstructure:"sim" yaml:"sim"`
	Datasets DatasetsConfig `mapstructure:"datasets" yaml:"datasets"`
	Network  NetworkConfig  `mapstructure:"network" yaml:"network"`
	Pretrain PretrainConfig `mapstructure:"pretrain" yaml:"pretrain"`
	Finetune FinetuneConfig `mapstructure:"finetune" yaml:"finetune"`
	Eval     EvalConfig     `mapstructure:"eval" yaml:"eval"`
	Registry RegistryConfig `mapstructure:"registry" yaml:"registry"`
	Pipeline PipelineConfig `mapstructure:"pipeline" yaml:"pipeline"`
	Defrag   DefragConfig   `mapstructure:"defrag" yaml:"defrag"`
	// DefragOnline is the defrag-online environment's section.
	DefragOnline DefragOnlineConfig `mapstructure:"defrag_online" yaml:"defrag_online"`
	// MAIFS is the multi-agent fungible scheduler's world and workloads (maifs-bc, env maifs).
	MAIFS MAIFSConfig `mapstructure:"maifs" yaml:"maifs"`
}

// Section is implemented by section types that have defaults (through a pointer) and rules.
type Section interface {
	SetDefaults()
	Validate() error
}

// Endpoint is a service a section is configured to use: a URL (http, https, s3, tcp) or
// host:port, or a local path for file-based stores.
type Endpoint struct {
	Name string // "registry.store", "registry.tracking"
	URL  string
}

// Endpoints lists the configured services of every section that declares some.
func (c Config) Endpoints() []Endpoint {
	var out []Endpoint
	forEachSection(&c, func(_ string, s reflect.Value) {
		if e, ok := s.Interface().(interface{ Endpoints() []Endpoint }); ok {
			out = append(out, e.Endpoints()...)
		}
	})
	return out
}
