package jobs

import (
	"slices"
	"testing"
)

// The expected values are CPython 3.11's random.Random(seed) (getrandbits(32) x3, shuffle of
// ['v100','p100','k80'] x4, randrange over 1,2,3,1,3,2,7,100), generated once and kept here.
func TestPyRandomMatchesCPython(t *testing.T) {
	cases := []struct {
		seed  uint64
		bits  []uint32
		shufs [][]string
		rr    []int
	}{
		{0, []uint32{3626764237, 1654615998, 3255389356}, [][]string{{"v100", "k80", "p100"}, {"k80", "p100", "v100"}, {"v100", "p100", "k80"}, {"v100", "k80", "p100"}}, []int{0, 1, 0, 0, 2, 1, 3, 38}},
		{1, []uint32{577090037, 2444712010, 3639700191}, [][]string{{"p100", "k80", "v100"}, {"k80", "v100", "p100"}, {"v100", "k80", "p100"}, {"v100", "k80", "p100"}}, []int{0, 0, 1, 0, 1, 1, 3, 83}},
		{5, []uint32{2675342405, 1097127993, 3185950873}, [][]string{{"v100", "p100", "k80"}, {"v100", "p100", "k80"}, {"p100", "v100", "k80"}, {"k80", "v100", "p100"}}, []int{0, 1, 2, 0, 1, 0, 5, 6}},
		{6, []uint32{3407369726, 2464538600, 3530265750}, [][]string{{"p100", "v100", "k80"}, {"v100", "k80", "p100"}, {"p100", "k80", "v100"}, {"k80", "p100", "v100"}}, []int{0, 1, 1, 0, 0, 0, 5, 75}},
		{123456789, []uint32{2754794679, 1899526012, 2328685183}, [][]string{{"v100", "p100", "k80"}, {"v100", "p100", "k80"}, {"v100", "k80", "p100"}, {"v100", "k80", "p100"}}, []int{0, 1, 1, 0, 1, 1, 6, 51}},
		{1<<40 + 7, []uint32{2635837658, 3209733218, 3500038837}, [][]string{{"v100", "p100", "k80"}, {"k80", "v100", "p100"}, {"v100", "p100", "k80"}, {"v100", "p100", "k80"}}, []int{0, 1, 2, 0, 2, 1, 4, 92}},
	}
	for _, c := range cases {
		r := newPyRandom(c.seed)
		for i, want := range c.bits {
			if got := r.getrandbits(32); got != want {
				t.Errorf("seed %d: getrandbits #%d = %d, want %d", c.seed, i, got, want)
			}
		}
		r = newPyRandom(c.seed)
		for i, want := range c.shufs {
			x := []string{"v100", "p100", "k80"}
			shuffle(r, x)
			if !slices.Equal(x, want) {
				t.Errorf("seed %d: shuffle #%d = %v, want %v", c.seed, i, x, want)
			}
		}
		r = newPyRandom(c.seed)
		for i, n := range []int{1, 2, 3, 1, 3, 2, 7, 100} {
			if got := r.randrange(n); got != c.rr[i] {
				t.Errorf("seed %d: randrange(%d) #%d = %d, want %d", c.seed, n, i, got, c.rr[i])
			}
		}
	}
}
