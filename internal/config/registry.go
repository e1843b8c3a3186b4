package config

// RegistryConfig configures the object store and the MLflow mirror.
type RegistryConfig struct{}
