package config

// SimConfig configures the cluster simulator and workload generation.
type SimConfig struct{}
