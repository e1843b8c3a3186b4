package sim

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
)

// MilliPerGPU is the capacity of one GPU in milli-GPU.
const MilliPerGPU = 1000

// MaxGPUsPerNode bounds the GPUs of one node (openb nodes have 0..8).
const MaxGPUsPerNode = 8

// Node is a machine's static description.
type Node struct {
	Name    string
	CPU     int64  // milli-cores
	Mem     int64  // MiB
	GPUs    int    // 0..MaxGPUsPerNode
	GPUType string // model, e.g. "V100M16"; empty for CPU-only nodes
}

// Task is one pod's request. GPUMilli is the per-GPU share: 0 for CPU-only tasks, 1..999 for a
// GPU-sharing task (NumGPU = 1), 1000 for tasks that take NumGPU whole GPUs.
type Task struct {
	Name     string
	CPU      int64 // milli-cores
	Mem      int64 // MiB
	NumGPU   int
	GPUMilli int64
	// GPUTypes lists the GPU models the task may run on; empty means any.
	GPUTypes []string
	// Creation and Deletion are trace timestamps in seconds; Deletion < 0 means never deleted.
	Creation, Deletion int64
	// Scheduled is when the trace's scheduler started the task (seconds); < 0 when it never
	// ran (a pending pod). Deletion - Scheduled is the task's run time.
	Scheduled int64
}

// TotalGPUMilli is the task's whole GPU request in milli-GPU.
func (t Task) TotalGPUMilli() int64 { return int64(t.NumGPU) * t.GPUMilli }

// Sharing reports whether the task asks for a fraction of one GPU.
func (t Task) Sharing() bool { return t.NumGPU == 1 && t.GPUMilli < MilliPerGPU }

// Kind names the task's class: "cpu", "share", or "N-gpu" for N whole GPUs.
func (t Task) Kind() string {
	switch {
	case t.NumGPU == 0:
		return "cpu"
	case t.Sharing():
		return "share"
	default:
		return strconv.Itoa(t.NumGPU) + "-gpu"
	}
}

// Spec is the task's GPU type constraint as written in the trace ("A|B"), empty for any.
func (t Task) Spec() string { return strings.Join(t.GPUTypes, "|") }

// GPUSet is a set of GPU indices on one node (bit i = GPU i).
type GPUSet uint8

// NewGPUSet builds a set from indices.
func NewGPUSet(idx ...int) GPUSet {
	var s GPUSet
	for _, i := range idx {
		s |= 1 << uint(i)
	}
	return s
}

// Has reports whether GPU i is in the set.
func (s GPUSet) Has(i int) bool { return i >= 0 && i < MaxGPUsPerNode && s&(1<<uint(i)) != 0 }

// Len is the number of GPUs in the set.
func (s GPUSet) Len() int { return bits.OnesCount8(uint8(s)) }

// Indices lists the set's GPU indices in increasing order.
func (s GPUSet) Indices() []int {
	out := make([]int, 0, s.Len())
	for i := 0; i < MaxGPUsPerNode; i++ {
		if s.Has(i) {
			out = append(out, i)
		}
	}
	return out
}

// String formats the set as "[0 3]".
func (s GPUSet) String() string { return fmt.Sprint(s.Indices()) }

// Choice is a placement decision: a node index into Cluster.Nodes and the GPUs used there
// (empty for CPU-only tasks).
type Choice struct {
	Node int
	GPUs GPUSet
}
