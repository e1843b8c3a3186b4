package policy

import (
	"math/rand/v2"

	"github.com/schedrl/schedrl/sim"
)

// greedy: each step makes the single migration (a running task to a feasible node/GPU set on
// another node) that lowers the cluster fragment the most, until budget migrations are made or
// no migration lowers it. Moves between GPUs of the same node are not considered. It does not
// use the placement policy.
func init() {
	registerDefragger("greedy", func() Defragmenter { return &greedy{} })
}

type greedy struct{}

func (*greedy) Name() string { return "greedy" }

// target is a task shape's best destination and the runner-up on another node.
type target struct {
	best, second       sim.Choice
	bestGain, secGain  float64
	hasBest, hasSecond bool
}

// taskShape identifies tasks that fit and score alike as migration sources.
type taskShape struct {
	cpu, mem, milli int64
	numGPU          int
	spec            string
}

func (*greedy) Defrag(c *sim.Cluster, _ Placer, budget int, _ *rand.Rand, log *sim.LogWriter) ([]Move, error) {
	var moves []Move
	var cands []sim.Choice
	for len(moves) < budget {
		targets := map[taskShape]*target{}
		var bestMove Move
		bestGain := 1e-9
		for _, p := range c.Placements() {
			t := p.Task
			k := taskShape{t.CPU, t.Mem, t.GPUMilli, t.NumGPU, t.Spec()}
			tg, ok := targets[k]
			if !ok {
				tg = &target{}
				cands = c.Candidates(t, cands[:0])
				for _, ch := range cands {
					g := -c.FragDelta(t, ch)
					switch {
					case !tg.hasBest || g > tg.bestGain:
						if tg.hasBest && tg.best.Node != ch.Node {
							tg.second, tg.secGain, tg.hasSecond = tg.best, tg.bestGain, true
						}
						tg.best, tg.bestGain, tg.hasBest = ch, g, true
					case ch.Node != tg.best.Node && (!tg.hasSecond || g > tg.secGain):
						tg.second, tg.secGain, tg.hasSecond = ch, g, true
					}
				}
				targets[k] = tg
			}
			to, gain, ok := tg.best, tg.bestGain, tg.hasBest
			if ok && to.Node == p.Choice.Node {
				to, gain, ok = tg.second, tg.secGain, tg.hasSecond
			}
			if !ok {
				continue
			}
			// The source node's fragment cannot fall below 0, so a move whose bound is below
			// the best so far needs no FragWithout (most of the scan's cost).
			if gain+c.NodeFrag(p.Choice.Node) < bestGain {
				continue
			}
			without, _ := c.FragWithout(t.Name)
			total := gain + c.NodeFrag(p.Choice.Node) - without
			if total > bestGain || (total == bestGain && bestMove.Task != "" && t.Name < bestMove.Task) {
				bestGain, bestMove = total, Move{Task: t.Name, From: p.Choice, To: to}
			}
		}
		if bestMove.Task == "" {
			break
		}
		if err := c.Migrate(bestMove.Task, bestMove.To); err != nil {
			return moves, err
		}
		if err := log.Migrate(bestMove.Task, c.Node(bestMove.From.Node).Name, bestMove.From.GPUs, c.Node(bestMove.To.Node).Name, bestMove.To.GPUs); err != nil {
			return moves, err
		}
		moves = append(moves, bestMove)
	}
	return moves, nil
}
