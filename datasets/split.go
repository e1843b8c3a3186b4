package datasets

import (
	"crypto/sha256"
	"encoding/binary"
	"math"
	"sort"
)

// Split names.
const (
	SplitTrain = "train"
	SplitVal   = "val"
)

// assignSplits puts round(fraction x n) episodes into validation (at least one when the
// fraction is positive and there are two or more episodes), chosen by a seeded hash of each
// episode's name: the same logs and seed always give the same split, whatever order or folder
// the logs are in. Equal names keep their listing order.
func assignSplits(names []string, fraction float64, seed uint64) []string {
	n := len(names)
	nVal := int(math.Round(fraction * float64(n)))
	if fraction > 0 && nVal == 0 && n >= 2 {
		nVal = 1
	}
	nVal = min(nVal, n-1)
	type keyed struct {
		key uint64
		i   int
	}
	keys := make([]keyed, n)
	for i, name := range names {
		var s [8]byte
		binary.LittleEndian.PutUint64(s[:], seed)
		h := sha256.Sum256(append(s[:], name...))
		keys[i] = keyed{binary.LittleEndian.Uint64(h[:8]), i}
	}
	sort.SliceStable(keys, func(a, b int) bool { return keys[a].key < keys[b].key })
	out := make([]string, n)
	for rank, k := range keys {
		out[k.i] = SplitTrain
		if rank < nVal {
			out[k.i] = SplitVal
		}
	}
	return out
}
