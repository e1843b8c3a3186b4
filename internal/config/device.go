package config

import (
	"fmt"
	"strconv"
	"strings"
)

// DeviceConfig chooses where networks train and run.
type DeviceConfig struct {
	// Name is "auto" (CUDA when available, else CPU), "cpu", "cuda" or "cuda:N".
	Name string `mapstructure:"name" yaml:"name"`
	// Threads caps libtorch's intra-op CPU threads; 0 keeps libtorch's choice.
	Threads int `mapstructure:"threads" yaml:"threads"`
}

// SetDefaults selects CUDA when present.
func (c *DeviceConfig) SetDefaults() { c.Name = "auto" }

// Validate checks the device name and thread count.
func (c DeviceConfig) Validate() error {
	if _, _, err := ParseDevice(c.Name); err != nil {
		return fmt.Errorf("name: %w", err)
	}
	if c.Threads < 0 {
		return fmt.Errorf("threads: must be >= 0, got %d", c.Threads)
	}
	return nil
}

// DeviceKind is what a device name asks for.
type DeviceKind int

// Device kinds.
const (
	DeviceAuto DeviceKind = iota
	DeviceCPU
	DeviceCUDA
)

// ParseDevice splits a device name into its kind and, for CUDA, the ordinal ("cuda" is 0).
func ParseDevice(name string) (DeviceKind, int, error) {
	switch name {
	case "auto":
		return DeviceAuto, 0, nil
	case "cpu":
		return DeviceCPU, 0, nil
	case "cuda":
		return DeviceCUDA, 0, nil
	}
	if rest, ok := strings.CutPrefix(name, "cuda:"); ok {
		if n, err := strconv.Atoi(rest); err == nil && n >= 0 {
			return DeviceCUDA, n, nil
		}
	}
	return 0, 0, fmt.Errorf("unknown device %q (want auto, cpu, cuda or cuda:N)", name)
}
