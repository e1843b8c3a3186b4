package config

import "fmt"

// SimConfig configures `schedrl sim`: the cluster, the workload and the placement expert.
type SimConfig struct {
	// Nodes is the openb node list CSV.
	Nodes string `mapstructure:"nodes" yaml:"nodes"`
	// Pods is the openb pod list CSV the workload is sampled from.
	Pods string `mapstructure:"pods" yaml:"pods"`
	// Policy is the placement expert (random, dotprod, clustering, packing, bestfit, fgd).
	Policy string `mapstructure:"policy" yaml:"policy"`
	// Tune is the workload tuning ratio: total GPU request / cluster GPU capacity.
	Tune float64 `mapstructure:"tune" yaml:"tune"`
	// Seed names the workload (sampling and shuffle) and the policy's tie-breaks.
	Seed uint64 `mapstructure:"seed" yaml:"seed"`
	// Coverage is the share of tasks the typical shapes of the fragment measure cover.
	Coverage float64 `mapstructure:"coverage" yaml:"coverage"`
}

// SetDefaults is the paper's protocol on the default openb trace with FGD.
func (c *SimConfig) SetDefaults() {
	c.Nodes = "data/openb/openb_node_list_gpu_node.csv"
	c.Pods = "data/openb/openb_pod_list_default.csv"
	c.Policy = "fgd"
	c.Tune = 1.3
	c.Seed = 42
	c.Coverage = 0.95
}

// Validate checks the section's fields; the policy name is checked by the sim command.
func (c SimConfig) Validate() error {
	switch {
	case c.Nodes == "":
		return fmt.Errorf("nodes: must name a node list CSV")
	case c.Pods == "":
		return fmt.Errorf("pods: must name a pod list CSV")
	case c.Policy == "":
		return fmt.Errorf("policy: must name a placement policy")
	case !(c.Tune > 0 && c.Tune <= 10):
		return fmt.Errorf("tune: must be in (0, 10], got %v", c.Tune)
	case !(c.Coverage > 0 && c.Coverage <= 1):
		return fmt.Errorf("coverage: must be in (0, 1], got %v", c.Coverage)
	}
	return nil
}
