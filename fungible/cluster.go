package fungible

import (
	"fmt"
	"slices"

	"github.com/schedrl/schedrl/jobs"
	"github.com/schedrl/schedrl/sim"
)

// GPUTypes are the throughput classes of Gavel's table, in the order of a V:P:K cluster spec
// (jobs.GPU's).
var GPUTypes = []string{jobs.V100.String(), jobs.P100.String(), jobs.K80.String()}

func isGPUType(s string) bool { return slices.Contains(GPUTypes, s) }

// Synergy's default server: 8 GPUs, 24 CPUs, 500 GB, so 3 CPUs and 62.5 GB per GPU.
const (
	ServerGPUs  = 8
	CPUsPerGPU  = 3.0
	MemGBPerGPU = 62.5
)

// Server is one machine: GPUs of one type, CPU cores and memory in GB.
type Server struct {
	Name    string
	GPUType string
	GPUs    int
	CPUs    float64
	MemGB   float64
}

// Cluster is a list of servers; allocations name servers by their index in it.
type Cluster []Server

// NewMixCluster builds a V100:P100:K80 cluster from a "V:P:K" spec in GPUs (read by
// jobs.ParseCluster, the one parser of the spec), in servers of
// serverGPUs GPUs with Synergy's 3 CPUs and 62.5 GB per GPU. A count that is not a multiple of
// the server size leaves one smaller server with the remainder (36 GPUs of 8-GPU servers: four of
// 8 and one of 4).
func NewMixCluster(spec string, serverGPUs int) (Cluster, error) {
	if serverGPUs < 1 {
		return nil, fmt.Errorf("server size %d GPUs, want at least 1", serverGPUs)
	}
	counts, err := jobs.ParseCluster(spec, "")
	if err != nil {
		return nil, err
	}
	var c Cluster
	for i, t := range GPUTypes {
		for k, n := 0, counts.GPUs[i]; n > 0; k++ {
			g := min(n, serverGPUs)
			c = append(c, Server{Name: fmt.Sprintf("%s-%02d", t, k), GPUType: t, GPUs: g,
				CPUs: CPUsPerGPU * float64(g), MemGB: MemGBPerGPU * float64(g)})
			n -= g
		}
	}
	return c, nil
}

// OpenbCluster turns an openb node list into servers: GPU nodes only, each GPU model mapped to
// its throughput class by classes (LoadOpenbClasses), CPUs from milli-cores, memory from MiB
// counted as GB (1 GiB = 1 GB here: Synergy's grid is too coarse for the 7% to matter).
func OpenbCluster(nodes []sim.Node, classes map[string]string) (Cluster, error) {
	var c Cluster
	for _, n := range nodes {
		if n.GPUs == 0 {
			continue
		}
		class, ok := classes[n.GPUType]
		if !ok {
			return nil, fmt.Errorf("node %s: GPU model %q has no throughput class (add it to the openb class table)", n.Name, n.GPUType)
		}
		c = append(c, Server{Name: n.Name, GPUType: class, GPUs: n.GPUs, CPUs: float64(n.CPU) / 1000, MemGB: float64(n.Mem) / 1024})
	}
	if len(c) == 0 {
		return nil, fmt.Errorf("node list has no GPU nodes")
	}
	return c, nil
}

// Types lists the GPU types the cluster has, in GPUTypes order.
func (c Cluster) Types() []string {
	var out []string
	for _, t := range GPUTypes {
		if slices.ContainsFunc(c, func(s Server) bool { return s.GPUType == t }) {
			out = append(out, t)
		}
	}
	return out
}

// FairShare is the fair share of CPUs and GB per GPU on a GPU type: the smallest per-GPU share
// among its servers, so that every server of the type can hold it on all its GPUs at once (what
// TUNE's guarantee rests on). On a V:P:K cluster it is Synergy's 3 CPUs and 62.5 GB.
func (c Cluster) FairShare(gpuType string) (cpus, mem float64) {
	first := true
	for _, s := range c {
		if s.GPUType != gpuType {
			continue
		}
		cp, m := s.CPUs/float64(s.GPUs), s.MemGB/float64(s.GPUs)
		if first || cp < cpus {
			cpus = cp
		}
		if first || m < mem {
			mem = m
		}
		first = false
	}
	return cpus, mem
}
