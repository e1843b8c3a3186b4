package config

import (
	"fmt"
	"regexp"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Executors are pipeline.executor.kind's values.
var Executors = []string{"local", "kubernetes"}

// ExecutorConfig says where the sharded stages (the logs stage's expert runs, eval's cells)
// run: in this process (local), or as a Kubernetes Indexed Job whose pods write their parts
// to the registry's store (docs/distributed.md). Only where work runs depends on it: no stage
// key does.
type ExecutorConfig struct {
	Kind string `mapstructure:"kind" yaml:"kind"`
	// Kubeconfig is the cluster's kubeconfig file; empty: $KUBECONFIG, else in-cluster.
	Kubeconfig string `mapstructure:"kubeconfig" yaml:"kubeconfig"`
	Namespace  string `mapstructure:"namespace" yaml:"namespace"`
	// Image is schedrl's image (`make image`) of the same commit as this binary.
	Image string `mapstructure:"image" yaml:"image"`
	// Parallelism is how many pods run at once; Shards how many parts the work is cut into
	// (0: twice Parallelism, at most one per cell).
	Parallelism int `mapstructure:"parallelism" yaml:"parallelism"`
	Shards      int `mapstructure:"shards" yaml:"shards"`
	// Retries is each shard's backoffLimitPerIndex: a failed or deleted pod is replaced this
	// many times before the Job fails.
	Retries int `mapstructure:"retries" yaml:"retries"`
	// Timeout bounds the whole Job, from creation to its last part read back.
	Timeout time.Duration `mapstructure:"timeout" yaml:"timeout"`
	// HostNetwork runs the pods in the node's network, for a store that listens on the
	// node's loopback (the test cluster's MinIO).
	HostNetwork bool `mapstructure:"host_network" yaml:"host_network"`
	// Secret names a Secret in Namespace whose keys become the pods' environment: the
	// store's credentials (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY).
	Secret    string            `mapstructure:"secret" yaml:"secret"`
	Resources ExecutorResources `mapstructure:"resources" yaml:"resources"`
}

// ExecutorResources are each pod's requests (and limits: the same values).
type ExecutorResources struct {
	CPU    string `mapstructure:"cpu" yaml:"cpu"`       // a Kubernetes quantity, e.g. "1" or "500m"
	Memory string `mapstructure:"memory" yaml:"memory"` // e.g. "2Gi"
	GPU    int    `mapstructure:"gpu" yaml:"gpu"`       // nvidia.com/gpu
}

// SetDefaults: local; for kubernetes, 4 pods of 1 CPU and 2 GiB in "default", 2 retries, 1 h.
func (c *ExecutorConfig) SetDefaults() {
	c.Kind = "local"
	c.Namespace = "default"
	c.Parallelism = 4
	c.Retries = 2
	c.Timeout = time.Hour
	c.Resources = ExecutorResources{CPU: "1", Memory: "2Gi"}
}

var (
	dnsLabel     = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)
	dnsSubdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$`)
)

// Validate checks every key whatever the kind, so a mistake shows before it is switched on.
func (c ExecutorConfig) Validate() error {
	switch {
	case c.Kind != "local" && c.Kind != "kubernetes":
		return fmt.Errorf("executor.kind: %q, want one of %v", c.Kind, Executors)
	case !dnsLabel.MatchString(c.Namespace):
		return fmt.Errorf("executor.namespace: %q is not a namespace name", c.Namespace)
	case c.Kind == "kubernetes" && c.Image == "":
		return fmt.Errorf("executor.image: required for the kubernetes executor (schedrl's image of this commit, `make image`)")
	case c.Parallelism < 1:
		return fmt.Errorf("executor.parallelism: must be >= 1, got %d", c.Parallelism)
	case c.Shards < 0:
		return fmt.Errorf("executor.shards: must be >= 0, got %d", c.Shards)
	case c.Retries < 0:
		return fmt.Errorf("executor.retries: must be >= 0, got %d", c.Retries)
	case c.Timeout <= 0:
		return fmt.Errorf("executor.timeout: must be > 0, got %v", c.Timeout)
	case c.Secret != "" && !dnsSubdomain.MatchString(c.Secret):
		return fmt.Errorf("executor.secret: %q is not a Secret name", c.Secret)
	case c.Resources.GPU < 0:
		return fmt.Errorf("executor.resources.gpu: must be >= 0, got %d", c.Resources.GPU)
	}
	for key, q := range map[string]string{"cpu": c.Resources.CPU, "memory": c.Resources.Memory} {
		if q == "" {
			continue
		}
		if _, err := resource.ParseQuantity(q); err != nil {
			return fmt.Errorf("executor.resources.%s: %q is not a quantity (e.g. 500m, 2Gi)", key, q)
		}
	}
	return nil
}

// ShardCount is how many shards work of cells cells is cut into.
func (c ExecutorConfig) ShardCount(cells int) int {
	n := c.Shards
	if n == 0 {
		n = 2 * c.Parallelism
	}
	return max(1, min(n, cells))
}
