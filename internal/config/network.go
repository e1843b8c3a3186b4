package config

import "fmt"

// NetworkConfig sizes the entity network shared by pretrain and finetune (package nn): a
// per-node encoder, a task embedding, a node-task scorer and a value head. A checkpoint records
// these sizes, so loading one never needs this section.
type NetworkConfig struct {
	// Hidden is the width of node and task embeddings.
	Hidden int `mapstructure:"hidden" yaml:"hidden"`
	// EncoderLayers is the depth of the per-node encoder MLP.
	EncoderLayers int `mapstructure:"encoder_layers" yaml:"encoder_layers"`
	// HeadHidden is the width of the hidden layer of the score and value heads.
	HeadHidden int `mapstructure:"head_hidden" yaml:"head_hidden"`
}

// SetDefaults is a small network: a decision on the 1213-node cluster costs well under a
// millisecond on one CPU core.
func (c *NetworkConfig) SetDefaults() {
	c.Hidden = 32
	c.EncoderLayers = 2
	c.HeadHidden = 32
}

// The largest networks any config, flag or checkpoint manifest may ask for: a layer of
// MaxWidth units, MaxLayers encoder layers (about 270 M weights at both limits). A checkpoint's
// manifest is held to them before libtorch allocates anything (package nn).
const (
	MaxWidth  = 4096
	MaxLayers = 16
)

// Validate checks the sizes.
func (c NetworkConfig) Validate() error {
	switch {
	case c.Hidden < 1 || c.Hidden > MaxWidth:
		return fmt.Errorf("hidden: must be in 1..%d, got %d", MaxWidth, c.Hidden)
	case c.EncoderLayers < 1 || c.EncoderLayers > MaxLayers:
		return fmt.Errorf("encoder_layers: must be in 1..%d, got %d", MaxLayers, c.EncoderLayers)
	case c.HeadHidden < 1 || c.HeadHidden > MaxWidth:
		return fmt.Errorf("head_hidden: must be in 1..%d, got %d", MaxWidth, c.HeadHidden)
	}
	return nil
}
