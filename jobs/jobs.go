// Package jobs simulates deep-learning jobs in time on a heterogeneous GPU cluster, Gavel's
// model: a job is a number of steps of one job type on scale-factor GPUs of one type, and runs
// at that type's measured throughput (data/gavel/simulation_throughputs.json). Scheduling is in
// rounds: at each round boundary a queue policy decides which jobs run on which GPU type, and a
// job not chosen again is preempted. Run executes schedrl's own round model, or with
// Config.Compat "gavel" a reproduction of Gavel's simulator, quirks included (docs/jobs.md).
package jobs

import (
	"fmt"
	"strconv"
	"strings"
)

// GPU is a GPU type; its value indexes per-type arrays.
type GPU int

// The GPU types of Gavel's throughput table, in the cluster spec's V100:P100:K80 order.
const (
	V100 GPU = iota
	P100
	K80
	NumGPUs = 3
)

var gpuNames = [NumGPUs]string{"v100", "p100", "k80"}

func (g GPU) String() string { return gpuNames[g] }

// JobType keys the throughput table: a model (with its batch size) and a scale factor (GPUs).
type JobType struct {
	Model string
	Scale int
}

func (t JobType) String() string { return fmt.Sprintf("('%s', %d)", t.Model, t.Scale) }

// Cluster is a count of GPUs per type, grouped into servers of PerServer GPUs.
type Cluster struct {
	GPUs      [NumGPUs]int
	PerServer [NumGPUs]int
}

// ParseCluster reads a V100:P100:K80 GPU count ("36:36:36") and, when servers is not empty,
// a V100:P100:K80 server size ("4:4:4"). As in Gavel, a type gets count/size whole servers, so
// GPUs beyond the last whole server are not in the cluster.
func ParseCluster(spec, servers string) (Cluster, error) {
	var c Cluster
	counts, err := parseTriple(spec, 0)
	if err != nil {
		return c, fmt.Errorf("cluster %q: %w (want V100:P100:K80 GPU counts, e.g. 36:36:36)", spec, err)
	}
	c.PerServer = [NumGPUs]int{1, 1, 1}
	if servers != "" {
		if c.PerServer, err = parseTriple(servers, 1); err != nil {
			return c, fmt.Errorf("servers-gpus %q: %w (want V100:P100:K80 GPUs per server, e.g. 4:4:4)", servers, err)
		}
	}
	total := 0
	for g := range NumGPUs {
		c.GPUs[g] = counts[g] / c.PerServer[g] * c.PerServer[g]
		total += c.GPUs[g]
	}
	if total == 0 {
		return c, fmt.Errorf("cluster %q has no GPU", spec)
	}
	return c, nil
}

func parseTriple(s string, min int) ([NumGPUs]int, error) {
	var v [NumGPUs]int
	parts := strings.Split(s, ":")
	if len(parts) != NumGPUs {
		return v, fmt.Errorf("%d fields, want 3", len(parts))
	}
	for i, p := range parts {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < min {
			return v, fmt.Errorf("field %d (%s) is %q, want an integer >= %d", i+1, gpuNames[i], p, min)
		}
		v[i] = n
	}
	return v, nil
}

// Total is the cluster's GPU count.
func (c Cluster) Total() int { return c.GPUs[V100] + c.GPUs[P100] + c.GPUs[K80] }
