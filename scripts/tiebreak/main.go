// Command tiebreak measures how much of FGD's GPU allocation comes from its quantised score and
// its tie-break rather than from the fragment measure itself: it runs FGD's fragment change
// under several decision rules on the held-out openb workloads (tune 1.3) and prints the
// allocation at 130% arrived. docs/finetune.md ("Why PPO has not passed FGD") reads its output.
//
//	go run ./scripts/tiebreak [--seeds 49-51]
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"

	"github.com/schedrl/schedrl/sim"
)

// rule orders a task's feasible nodes: the node with the smallest key (compared in order)
// wins; equal keys go to the node first in the cluster's tie order, as the heuristics break
// ties. sample, when set, replaces the order by a draw.
type rule struct {
	name   string
	key    func(c *sim.Cluster, i int, delta float64) [2]float64
	sample float64 // softmin temperature in milli-GPU (0: deterministic)
}

// fgdScore is FGD's integer score of a fragment change (higher is better), negated as a key.
func fgdScore(delta float64) float64 { return -sim.FGDScore(delta) }

func bucket(width float64) func(*sim.Cluster, int, float64) [2]float64 {
	return func(_ *sim.Cluster, _ int, d float64) [2]float64 { return [2]float64{math.Floor(d / width)} }
}

var rules = []rule{
	{name: "fgd (integer score, tie order)", key: func(_ *sim.Cluster, _ int, d float64) [2]float64 { return [2]float64{fgdScore(d)} }},
	{name: "exact fragment change, tie order", key: func(_ *sim.Cluster, _ int, d float64) [2]float64 { return [2]float64{d} }},
	{name: "change in 25-milli buckets", key: bucket(25)},
	{name: "change in 100-milli buckets", key: bucket(100)},
	{name: "change in 400-milli buckets", key: bucket(400)},
	{name: "fgd, ties to the fullest node", key: func(c *sim.Cluster, i int, d float64) [2]float64 {
		return [2]float64{fgdScore(d), float64(c.Free(i).TotalGPU())}
	}},
	{name: "fgd, ties to the emptiest node", key: func(c *sim.Cluster, i int, d float64) [2]float64 {
		return [2]float64{fgdScore(d), -float64(c.Free(i).TotalGPU())}
	}},
	{name: "fgd, ties to the least free CPU", key: func(c *sim.Cluster, i int, d float64) [2]float64 {
		return [2]float64{fgdScore(d), float64(c.Free(i).CPU)}
	}},
	{name: "fgd, ties to the fewest idle GPUs", key: func(c *sim.Cluster, i int, d float64) [2]float64 {
		return [2]float64{fgdScore(d), float64(c.Free(i).FullGPUs())}
	}},
	{name: "fgd, ties to the most idle GPUs", key: func(c *sim.Cluster, i int, d float64) [2]float64 {
		return [2]float64{fgdScore(d), -float64(c.Free(i).FullGPUs())}
	}},
	{name: "softmin sample, T=20 milli", sample: 20},
	{name: "softmin sample, T=100 milli", sample: 100},
}

type placer struct {
	rule   rule
	nodes  []int
	gpus   []sim.GPUSet
	deltas []float64
}

func (p *placer) Name() string { return p.rule.name }

func (p *placer) Place(c *sim.Cluster, t sim.Task, rng *rand.Rand) (sim.Choice, bool) {
	p.nodes = c.FeasibleNodes(t, p.nodes[:0])
	if len(p.nodes) == 0 {
		return sim.Choice{}, false
	}
	p.gpus, p.deltas = p.gpus[:0], p.deltas[:0]
	for _, i := range p.nodes {
		g, d, _ := c.LeastFragmentingGPUs(t, i, sim.Delta)
		p.gpus, p.deltas = append(p.gpus, g), append(p.deltas, d)
	}
	k := p.pick(c, rng)
	return sim.Choice{Node: p.nodes[k], GPUs: p.gpus[k]}, true
}

func (p *placer) pick(c *sim.Cluster, rng *rand.Rand) int {
	if T := p.rule.sample; T > 0 {
		least := math.Inf(1)
		for _, d := range p.deltas {
			least = math.Min(least, d)
		}
		total := 0.0
		w := make([]float64, len(p.deltas))
		for k, d := range p.deltas {
			w[k] = math.Exp(-(d - least) / T)
			total += w[k]
		}
		u := rng.Float64() * total
		for k := range w {
			if u -= w[k]; u <= 0 {
				return k
			}
		}
		return len(w) - 1
	}
	best := 0
	bestKey := p.rule.key(c, p.nodes[0], p.deltas[0])
	for k := 1; k < len(p.nodes); k++ {
		key := p.rule.key(c, p.nodes[k], p.deltas[k])
		if key[0] < bestKey[0] || (key[0] == bestKey[0] && (key[1] < bestKey[1] ||
			(key[1] == bestKey[1] && c.TieRank(p.nodes[k]) < c.TieRank(p.nodes[best])))) {
			best, bestKey = k, key
		}
	}
	return best
}

func main() {
	traces := flag.String("traces-dir", "data/openb", "folder of the openb CSVs")
	seedSpec := flag.String("seeds", "49-51", "seeds A-B")
	flag.Parse()
	lo, hi, _ := strings.Cut(*seedSpec, "-")
	a, err1 := strconv.ParseUint(lo, 10, 64)
	b, err2 := strconv.ParseUint(hi, 10, 64)
	if err1 != nil || err2 != nil || b < a {
		fmt.Fprintf(os.Stderr, "tiebreak: --seeds %q: want A-B\n", *seedSpec)
		os.Exit(2)
	}
	var jobs []sim.Job
	for s := a; s <= b; s++ {
		jobs = append(jobs, sim.Job{Experiment: sim.Experiment{NodesPath: *traces + "/openb_node_list_gpu_node.csv",
			PodsPath: *traces + "/openb_pod_list_default.csv", Tune: 1.3, Seed: s, Coverage: 0.95}})
	}
	fmt.Printf("GPU allocation %% at 130%% arrived, default trace, seeds %s\n", *seedSpec)
	for _, r := range rules {
		res := sim.RunBatch(context.Background(), jobs, func() (sim.Placer, error) { return &placer{rule: r}, nil }, 0)
		var sum float64
		var per []string
		for _, j := range res {
			if j.Err != nil {
				fmt.Fprintln(os.Stderr, "tiebreak:", j.Err)
				os.Exit(1)
			}
			v := math.NaN()
			for _, p := range j.Result.Curve {
				if p.ArrivedPct == 130 {
					v = p.AllocGPUPct
				}
			}
			sum += v
			per = append(per, fmt.Sprintf("%.2f", v))
		}
		fmt.Printf("%-36s mean %.2f  (%s)\n", r.name, sum/float64(len(res)), strings.Join(per, " "))
	}
}
