package finetune

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/schedrl/schedrl/internal/config"
)

// BenchmarkPPOFullCluster times PPO on the 1213-node cluster (rollouts and updates, without
// held-out evaluation) and reports environment steps per second. FINETUNE_BENCH_FROM names the
// checkpoint to start from (default none: a fresh network). The start matters: a fresh
// network spreads tasks, so its decisions have ~3x more distinct node rows than a
// behaviour-cloned one's.
func BenchmarkPPOFullCluster(b *testing.B) {
	cfg := config.Default()
	cfg.Device = config.DeviceConfig{Name: "cpu", Threads: benchThreads()}
	fc := &cfg.Finetune
	fc.From, fc.Out = "none", filepath.Join(b.TempDir(), "run")
	if from := os.Getenv("FINETUNE_BENCH_FROM"); from != "" {
		fc.From = from
	}
	fc.Nodes = filepath.Join(traceDir(), "openb_node_list_gpu_node.csv")
	fc.TracesDir = traceDir()
	fc.ClusterSizes = []int{0}
	fc.TiePrior = 1 // as configs/finetune-openb.yaml: rows carry prior masses, nodes are drawn by tie order
	fc.EvalEvery, fc.EvalClusterSize, fc.EvalSeeds = 0, 16, "49"
	fc.CheckpointEvery = 1000
	fc.TotalSteps = b.N * fc.NumEnvs * fc.RolloutSteps
	b.ResetTimer()
	start := time.Now()
	res, err := Run(context.Background(), cfg, Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(res.StepsPerSecond, "env-steps/s")
	b.ReportMetric(time.Since(start).Seconds()/float64(b.N), "s/update")
}

// benchThreads is libtorch's intra-op thread count for the benchmark: FINETUNE_BENCH_THREADS,
// default 1 (on two shared cores OpenMP's spinning threads cost more than they give).
func benchThreads() int {
	n, err := strconv.Atoi(os.Getenv("FINETUNE_BENCH_THREADS"))
	if err != nil {
		return 1
	}
	return n
}
