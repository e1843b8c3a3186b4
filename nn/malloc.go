package nn

// #include <malloc.h>
import "C"

import "os"

// libtorch allocates and frees tensors of several megabytes on every op of a batched forward
// or backward pass. glibc serves blocks that large with mmap and returns them with munmap, so
// each op paid a page fault per 4 kB it touched: a fifth of a PPO update went to the kernel.
// Raising the mmap and trim thresholds keeps freed blocks in the heap for the next op.
// Measured on the full-cluster PPO benchmark (1 libtorch thread): 500 -> 614 env steps/s.
// The trim threshold is high on purpose: at 128 MB the heap was trimmed and regrown as late
// episodes' larger batches came and went (whole-episode benchmark, 2 threads: 376 env steps/s
// and 47 s in the kernel, against 627 and 8 s at 1 GB). A MALLOC_MMAP_THRESHOLD_ set by the
// user wins.
func init() {
	if _, set := os.LookupEnv("MALLOC_MMAP_THRESHOLD_"); set {
		return
	}
	C.mallopt(C.M_MMAP_THRESHOLD, 256<<20)
	C.mallopt(C.M_TRIM_THRESHOLD, 1<<30)
}
