package config

import (
	"strings"
	"testing"
)

func TestPretrainAndNetworkValidate(t *testing.T) {
	var p PretrainConfig
	p.SetDefaults()
	var n NetworkConfig
	n.SetDefaults()
	if err := p.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	if err := n.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for _, tc := range []struct {
		field string
		edit  func(*PretrainConfig, *NetworkConfig)
	}{
		{"epochs", func(p *PretrainConfig, _ *NetworkConfig) { p.Epochs = 0 }},
		{"batch_size", func(p *PretrainConfig, _ *NetworkConfig) { p.BatchSize = 0 }},
		{"lr_schedule", func(p *PretrainConfig, _ *NetworkConfig) { p.LRSchedule = "step" }},
		{"lr_min", func(p *PretrainConfig, _ *NetworkConfig) { p.LRMin = 2 * p.LR }},
		{"grad_clip", func(p *PretrainConfig, _ *NetworkConfig) { p.GradClip = -1 }},
		{"beta2", func(p *PretrainConfig, _ *NetworkConfig) { p.Beta2 = 1 }},
		{"hidden", func(_ *PretrainConfig, n *NetworkConfig) { n.Hidden = 0 }},
		{"encoder_layers", func(_ *PretrainConfig, n *NetworkConfig) { n.EncoderLayers = 17 }},
	} {
		pc, nc := p, n
		tc.edit(&pc, &nc)
		err := pc.Validate()
		if err == nil {
			err = nc.Validate()
		}
		if err == nil || !strings.HasPrefix(err.Error(), tc.field+":") {
			t.Errorf("%s: got %v, want an error naming the field", tc.field, err)
		}
	}
}
