package nn

import (
	"strings"
	"testing"

	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/internal/checkpoint"
	"github.com/schedrl/schedrl/internal/config"
)

// A checkpoint manifest asking for an absurd network is refused before libtorch allocates
// anything: ArchOf (what LoadCheckpoint checks before NewNet) and the multi-agent arch's
// check name the field (issue 34, class 3).
func TestAbsurdNetworkRefusedBeforeAllocation(t *testing.T) {
	spec, err := env.SpecOf(env.PlacementName)
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default().Network
	base := NewArch(spec, cfg, 1)
	for name, edit := range map[string]func(*Arch){
		"hidden":         func(a *Arch) { a.Hidden = 1 << 40 },
		"encoder_layers": func(a *Arch) { a.EncoderLayers = 1 << 20 },
		"head_hidden":    func(a *Arch) { a.HeadHidden = 1 << 31 },
		"node":           func(a *Arch) { a.NodeDim = 1 << 30 },
	} {
		a := base
		edit(&a)
		m := checkpoint.Manifest{Model: a.Kind, Hyper: map[string]any{"arch": a}}
		if _, err := ArchOf(m); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: ArchOf error %v, want one naming %s", name, err, name)
		}
	}
	for name, a := range map[string]MAIFSArch{
		"hidden":      NewMAIFSArch(1<<32, 4, 32, true, env.MAIFSOptions{}),
		"head_hidden": NewMAIFSArch(32, 4, 1<<40, true, env.MAIFSOptions{}),
	} {
		if err := a.validate(); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("maifs %s: %v, want an error naming %s", name, err, name)
		}
	}
}
