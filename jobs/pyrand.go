package jobs

// pyRandom is CPython's random.Random (MT19937 seeded from an integer, getrandbits,
// _randbelow, shuffle, randrange), bit for bit: Gavel's simulator draws its FIFO type choices
// and its per-round worker-type order from it, so the compat mode needs the same stream.
type pyRandom struct {
	mt  [624]uint32
	idx int
}

func newPyRandom(seed uint64) *pyRandom {
	r := &pyRandom{}
	// random.seed(int) feeds abs(seed) to init_by_array as 32-bit words, low word first.
	key := []uint32{uint32(seed)}
	if hi := uint32(seed >> 32); hi != 0 {
		key = append(key, hi)
	}
	r.initByArray(key)
	return r
}

func (r *pyRandom) initGenrand(s uint32) {
	r.mt[0] = s
	for i := 1; i < 624; i++ {
		r.mt[i] = 1812433253*(r.mt[i-1]^(r.mt[i-1]>>30)) + uint32(i)
	}
	r.idx = 624
}

func (r *pyRandom) initByArray(key []uint32) {
	r.initGenrand(19650218)
	i, j := 1, 0
	k := max(624, len(key))
	for ; k > 0; k-- {
		r.mt[i] = (r.mt[i] ^ ((r.mt[i-1] ^ (r.mt[i-1] >> 30)) * 1664525)) + key[j] + uint32(j)
		i++
		j++
		if i >= 624 {
			r.mt[0] = r.mt[623]
			i = 1
		}
		if j >= len(key) {
			j = 0
		}
	}
	for k = 623; k > 0; k-- {
		r.mt[i] = (r.mt[i] ^ ((r.mt[i-1] ^ (r.mt[i-1] >> 30)) * 1566083941)) - uint32(i)
		i++
		if i >= 624 {
			r.mt[0] = r.mt[623]
			i = 1
		}
	}
	r.mt[0] = 0x80000000
}

func (r *pyRandom) uint32() uint32 {
	const upper, lower = 0x80000000, 0x7fffffff
	if r.idx >= 624 {
		for k := 0; k < 624; k++ {
			y := (r.mt[k] & upper) | (r.mt[(k+1)%624] & lower)
			v := r.mt[(k+397)%624] ^ (y >> 1)
			if y&1 != 0 {
				v ^= 0x9908b0df
			}
			r.mt[k] = v
		}
		r.idx = 0
	}
	y := r.mt[r.idx]
	r.idx++
	y ^= y >> 11
	y ^= (y << 7) & 0x9d2c5680
	y ^= (y << 15) & 0xefc60000
	y ^= y >> 18
	return y
}

// getrandbits is random.getrandbits for 1 <= k <= 32.
func (r *pyRandom) getrandbits(k int) uint32 { return r.uint32() >> (32 - k) }

// randbelow is random._randbelow_with_getrandbits: rejection sampling on bit_length(n) bits.
func (r *pyRandom) randbelow(n int) int {
	k := 0
	for v := n; v > 0; v >>= 1 {
		k++
	}
	for {
		if v := int(r.getrandbits(k)); v < n {
			return v
		}
	}
}

// randrange is random.randrange(n) for n >= 1.
func (r *pyRandom) randrange(n int) int { return r.randbelow(n) }

// shuffle is random.shuffle: Fisher-Yates from the back.
func shuffle[T any](r *pyRandom, x []T) {
	for i := len(x) - 1; i > 0; i-- {
		j := r.randbelow(i + 1)
		x[i], x[j] = x[j], x[i]
	}
}
