// Package config loads schedrl's viper YAML configuration: built-in defaults, then the file,
// then SCHEDRL_SECTION_KEY environment variables, then flags. Unknown keys are errors.
//
// Each pipeline stage owns one section, defined in its own file of this package
// (sim.go, datasets.go, ...) with its defaults and validation.
package config

// Config is the whole effective configuration; one field per stage section.
type Config struct {
	Seed     int64          `mapstructure:"seed" yaml:"seed"`
	Sim      SimConfig      `mapstructure:"sim" yaml:"sim"`
	Eval     EvalConfig     `mapstructure:"eval" yaml:"eval"`
	Registry RegistryConfig `mapstructure:"registry" yaml:"registry"`
	Pipeline PipelineConfig `mapstructure:"pipeline" yaml:"pipeline"`
}
