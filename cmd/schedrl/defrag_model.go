package main

import (
	"github.com/schedrl/schedrl/defrag"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/nn"
)

// modelPlanner loads a defrag checkpoint as a planner on the configured device. It lives in
// cmd because the defrag package stays free of libtorch.
func modelPlanner(cfg config.Config, dir string) (defrag.Planner, error) {
	dev, err := nn.Device(cfg.Device)
	if err != nil {
		return nil, err
	}
	return nn.LoadDefragPolicy(dir, dev)
}
