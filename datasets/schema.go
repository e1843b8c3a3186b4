package datasets

import "fmt"

// SchemaVersion names the row layout below; readers refuse any other.
const SchemaVersion = "transitions-v1"

// Row is one decision. The observation is not stored: it is rebuilt exactly by replaying the
// episode's actions (and logged changes) through the environment from the episode's starting
// context (see env.Context). That keeps a transition on the 1213-node cluster to a few hundred bytes instead
// of tens of kilobytes, and the stored mask lets the reader prove the rebuild matches.
type Row struct {
	Episode int32  `parquet:"episode,delta"`
	Step    int32  `parquet:"step,delta"`
	LogLine int32  `parquet:"log_line,delta"` // line of the source log that holds the action
	Stage   int32  `parquet:"stage"`          // 0 for single-stage environments
	TaskID  string `parquet:"task_id"`
	// The task the decision is about, as the environment sees it.
	TaskCPU      int64  `parquet:"task_cpu_milli"`
	TaskMemory   int64  `parquet:"task_memory_mib"`
	TaskGPUs     int32  `parquet:"task_num_gpu"`
	TaskGPUMilli int32  `parquet:"task_gpu_milli"`
	TaskGPUSpec  string `parquet:"task_gpu_spec,dict"`
	// ArrivedMilli is the GPU request (milli) that arrived before this task, failed tasks included.
	ArrivedMilli int64 `parquet:"arrived_gpu_milli,delta"`
	// Mask is the feasible-candidate bitmap: bit i of byte i/8 (least significant first).
	Mask        []byte `parquet:"mask"`
	NumFeasible int32  `parquet:"num_feasible"`
	// Action is the expert's candidate index; ActionGPUs the GPUs it used, bit g = GPU g.
	Action     int32    `parquet:"action"`
	ActionGPUs int32    `parquet:"action_gpus"`
	Reward     float32  `parquet:"reward"`
	Done       bool     `parquet:"done"`
	ReturnToGo float32  `parquet:"return_to_go"`
	LogProb    *float32 `parquet:"log_prob,optional"` // set when the logged policy recorded one
	// Changes are the state changes the log records between the previous decision and this one
	// (departures, evictions, migrations), applied in order before the decision.
	Changes []Change `parquet:"changes,list"`
}

// Change is a running task leaving (Node < 0) or moving to Node and GPUs.
type Change struct {
	Task string `parquet:"task"`
	Node int32  `parquet:"node"`
	GPUs int32  `parquet:"gpus"`
}

// Columns lists the column names in schema order, for documentation and interop checks.
var Columns = []string{
	"episode", "step", "log_line", "stage", "task_id",
	"task_cpu_milli", "task_memory_mib", "task_num_gpu", "task_gpu_milli", "task_gpu_spec",
	"arrived_gpu_milli", "mask", "num_feasible", "action", "action_gpus",
	"reward", "done", "return_to_go", "log_prob", "changes",
}

// PackMask packs a candidate mask into the Row.Mask bitmap, reusing dst.
func PackMask(dst []byte, mask []bool) []byte {
	n := (len(mask) + 7) / 8
	dst = append(dst[:0], make([]byte, n)...)
	for i, ok := range mask {
		if ok {
			dst[i/8] |= 1 << (i % 8)
		}
	}
	return dst
}

// UnpackMask expands a bitmap into n booleans, reusing dst.
func UnpackMask(dst []bool, bits []byte, n int) ([]bool, error) {
	if len(bits) != (n+7)/8 {
		return nil, fmt.Errorf("mask has %d bytes, want %d for %d candidates", len(bits), (n+7)/8, n)
	}
	dst = append(dst[:0], make([]bool, n)...)
	for i := range dst {
		dst[i] = bits[i/8]&(1<<(i%8)) != 0
	}
	return dst, nil
}
