package bpe

// pairTable maps a pair of adjacent token ids to the id their merge makes.
// It is an open-addressing hash table keyed by the two ids packed in a
// uint64: encoding looks a pair up for every neighbour it considers, and
// this is several times faster than a Go map of the same keys.
type pairTable struct {
	keys  []uint64 // a<<32 | b, or empty
	vals  []uint32 // the merged id
	mask  uint64
	shift uint // 64 - log2(len(keys))
	count int
}

// emptyKey marks a free slot: no pair has ids this large.
const emptyKey = ^uint64(0)

func pairKey(a, b uint32) uint64 { return uint64(a)<<32 | uint64(b) }

func newPairTable(n int) *pairTable {
	size, bits := 16, uint(4)
	for size < 2*n { // at most half full: probes stay short
		size <<= 1
		bits++
	}
	t := &pairTable{keys: make([]uint64, size), vals: make([]uint32, size), mask: uint64(size - 1), shift: 64 - bits}
	for i := range t.keys {
		t.keys[i] = emptyKey
	}
	return t
}

func (t *pairTable) slot(k uint64) uint64 {
	// Fibonacci hashing: the high bits of k times 2^64/φ spread pairs of
	// small ids over the whole table.
	return (k * 0x9E3779B97F4A7C15) >> t.shift
}

// get returns the id merging a and b make, and whether they merge.
func (t *pairTable) get(a, b uint32) (uint32, bool) {
	k := pairKey(a, b)
	for i := t.slot(k); ; i = (i + 1) & t.mask {
		switch t.keys[i] {
		case k:
			return t.vals[i], true
		case emptyKey:
			return 0, false
		}
	}
}

// add records that a and b merge into v; it reports false if the pair is
// there already.
func (t *pairTable) add(a, b, v uint32) bool {
	k := pairKey(a, b)
	i := t.slot(k)
	for ; t.keys[i] != emptyKey; i = (i + 1) & t.mask {
		if t.keys[i] == k {
			return false
		}
	}
	t.keys[i], t.vals[i] = k, v
	t.count++
	return true
}
