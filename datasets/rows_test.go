package datasets

import (
	"math/rand/v2"
	"strconv"
)

func itoa(i int) string { return strconv.Itoa(i) }

// syntheticRows makes rows with varied, exactly representable values for storage tests.
func syntheticRows(n, candidates int) []Row {
	rng := rand.New(rand.NewPCG(7, 11))
	rows := make([]Row, n)
	specs := []string{"", "V100M16", "G2|T4"}
	for i := range rows {
		mask := make([]bool, candidates)
		feasible := int32(0)
		for j := range mask {
			if rng.IntN(3) == 0 {
				mask[j] = true
				feasible++
			}
		}
		var lp *float32
		if i%2 == 0 {
			v := -float32(i%17) / 4
			lp = &v
		}
		rows[i] = Row{
			Episode: int32(i / 1000), Step: int32(i % 1000), LogLine: int32(i + 2),
			TaskID: "pod-" + strconv.Itoa(i), TaskCPU: int64(rng.IntN(64000)), TaskMemory: int64(rng.IntN(1 << 18)),
			TaskGPUs: int32(rng.IntN(3)), TaskGPUMilli: int32(rng.IntN(1001)), TaskGPUSpec: specs[i%3],
			ArrivedMilli: int64(i) * 700, Mask: PackMask(nil, mask), NumFeasible: feasible,
			Action: int32(rng.IntN(candidates)), ActionGPUs: int32(rng.IntN(256)),
			Reward: float32(rng.IntN(200)-100) / 8, Done: i%1000 == 999, ReturnToGo: float32(i) / 4, LogProb: lp,
		}
		if i%10 == 0 {
			rows[i].Changes = []Change{{Task: "gone-" + strconv.Itoa(i), Node: -1}, {Task: "moved", Node: int32(i % candidates), GPUs: 3}}
		}
	}
	return rows
}
