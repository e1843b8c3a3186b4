package nn

import (
	"math/rand/v2"
	"testing"

	"github.com/schedrl/schedrl/sim"
	"github.com/sugarme/gotch"
)

// With a tie prior the placer puts a task on the scheduler's preferred node among identical
// ones, whatever the random stream; without one it spreads over them.
func TestPlacerFollowsTheTieOrder(t *testing.T) {
	nodes := make([]sim.Node, 6)
	for i := range nodes {
		nodes[i] = sim.Node{Name: string(rune('a' + i)), CPU: 32000, Mem: 131072, GPUs: 4, GPUType: "V100"}
	}
	order := []int{4, 1, 5, 0, 3, 2}
	task := sim.Task{Name: "t", CPU: 1000, Mem: 1024, NumGPU: 1, GPUMilli: 500}
	for _, prior := range []float64{1, 0} {
		net := randomPlacementNet(t, "")
		net.Arch.TiePrior = prior
		pol := &Policy{Net: net, name: "test", dev: gotch.CPU}
		chosen := map[int]int{}
		for seed := range uint64(20) {
			c, err := sim.NewCluster(nodes, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.SetTieOrder(order); err != nil {
				t.Fatal(err)
			}
			ch, ok := pol.NewPlacer().Place(c, task, rand.New(rand.NewPCG(seed, 1)))
			if !ok {
				t.Fatal("nothing placed on an empty cluster")
			}
			chosen[ch.Node]++
		}
		switch {
		case prior > 0 && (len(chosen) != 1 || chosen[order[0]] != 20):
			t.Errorf("tie prior %v: choices %v, want node %d every time", prior, chosen, order[0])
		case prior == 0 && len(chosen) < 2:
			t.Errorf("no tie prior: choices %v, want a spread over the identical nodes", chosen)
		}
	}
}
