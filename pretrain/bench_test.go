package pretrain

import (
	"flag"
	"math/rand/v2"
	"testing"

	"github.com/sugarme/gotch"

	"github.com/schedrl/schedrl/datasets"
	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/internal/config"
	"github.com/schedrl/schedrl/nn"
)

var benchThreads = flag.Int("threads", 0, "BenchmarkTrainStep: libtorch CPU threads (0: libtorch's choice)")

// syntheticBatch is a training batch of the placement observation's shape on a cluster of n
// nodes: random features, half the nodes feasible, node 0 the expert's choice. The same shape
// scripts/bench/torch_reference.py times in PyTorch.
func syntheticBatch(size, n int) *datasets.Batch {
	spec, _ := env.SpecOf(env.PlacementName)
	rng := rand.New(rand.NewPCG(1, 1))
	b := &datasets.Batch{Size: size, MaxNodes: n, NodeDim: len(spec.Node), TaskDim: len(spec.Task), GlobalDim: len(spec.Global),
		NumNodes: make([]int32, size), Nodes: make([]float32, size*n*len(spec.Node)), Mask: make([]bool, size*n),
		Task: make([]float32, size*len(spec.Task)), Global: make([]float32, size*len(spec.Global)),
		Action: make([]int32, size), ReturnToGo: make([]float32, size)}
	for _, xs := range [][]float32{b.Nodes, b.Task, b.Global} {
		for i := range xs {
			xs[i] = rng.Float32()
		}
	}
	for i := range b.Mask {
		b.Mask[i] = i%n == 0 || rng.IntN(2) == 0
	}
	for j := range size {
		b.NumNodes[j], b.ReturnToGo[j] = int32(n), 50*rng.Float32()
	}
	return b
}

// BenchmarkTrainStep is one behaviour-cloning step (forward, masked cross-entropy + value
// loss, backward, clipping, Adam) on 32 decisions of the 1213-node cluster, with the default
// network; samples/s is the number to hold against the PyTorch reference.
func BenchmarkTrainStep(b *testing.B) {
	var pc config.PretrainConfig
	pc.SetDefaults()
	var nc config.NetworkConfig
	nc.SetDefaults()
	spec, _ := env.SpecOf(env.PlacementName)
	if _, err := nn.Device(config.DeviceConfig{Name: "cpu", Threads: *benchThreads}); err != nil {
		b.Fatal(err)
	}
	nn.Seed(1)
	net, err := nn.NewNet(nn.NewArch(spec, nc, 50), gotch.CPU)
	if err != nil {
		b.Fatal(err)
	}
	t := &trainer{cfg: pc, net: net, dev: gotch.CPU, totalSteps: 1 << 30,
		opt: nn.NewAdam(net.Params(), nn.AdamConfig{Beta1: pc.Beta1, Beta2: pc.Beta2, Eps: pc.Eps})}
	batch := syntheticBatch(pc.BatchSize, 1213)
	for range 3 {
		t.step(batch)
	}
	b.ResetTimer()
	for range b.N {
		t.step(batch)
	}
	b.ReportMetric(float64(b.N*batch.Size)/b.Elapsed().Seconds(), "samples/s")
}
