package fused

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"
)

// span is where a loan lies in memory, in bytes.
type span struct{ lo, hi uintptr }

func spanOf(b []float64) span {
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return span{lo, lo + uintptr(len(b))*8}
}

// TestArenaLoansDoNotOverlap borrows and gives back buffers of random
// sizes in a random order and requires, after every loan, that no two
// loans alive share a byte, that each has the length asked for and no
// room beyond it (an append could not reach a neighbour), and that a
// buffer given back reads NaN under FillGivenBack. Run again on the same
// arena, everything given back in between, the sequence finds the chunks
// the earlier runs made; once a run has made none, the next lends the same
// ranges again and makes none: a graph's runs repeat their placements.
func TestArenaLoansDoNotOverlap(t *testing.T) {
	defer FillGivenBack()()
	saved := chunkBytes
	chunkBytes = 8 * 300 // chunks of at most 300 entries, so that many fill up
	defer func() { chunkBytes = saved }()

	rng := rand.New(rand.NewPCG(7, 8))
	type step struct {
		n    int // > 0: borrow n entries; else give back the loan of index −n
		free int
	}
	var steps []step
	alive := 0
	var open []int // indexes of loans not yet given back, by the order they were made
	made := 0
	for range 4000 {
		if len(open) > 0 && rng.IntN(2) == 0 {
			k := rng.IntN(len(open))
			steps = append(steps, step{free: open[k]})
			open = slices.Delete(open, k, k+1)
			alive--
			continue
		}
		steps = append(steps, step{n: 1 + rng.IntN(400)})
		open = append(open, made)
		made++
		alive++
	}
	for _, k := range open {
		steps = append(steps, step{free: k})
	}

	var a arena[float64]
	run := func() []span {
		var placed []span
		loans := map[int][]float64{}
		next := 0
		for _, s := range steps {
			if s.n == 0 {
				b := loans[s.free]
				delete(loans, s.free)
				a.giveBack(b)
				if !math.IsNaN(b[0]) || !math.IsNaN(b[len(b)-1]) {
					t.Fatalf("a buffer given back does not read NaN")
				}
				continue
			}
			b := a.lend(s.n)
			if len(b) != s.n || cap(b) != s.n {
				t.Fatalf("a loan of %d entries has length %d and capacity %d", s.n, len(b), cap(b))
			}
			sb := spanOf(b)
			for k, other := range loans {
				if so := spanOf(other); sb.lo < so.hi && so.lo < sb.hi {
					t.Fatalf("loan %d [%#x, %#x) overlaps loan %d [%#x, %#x), alive", next, sb.lo, sb.hi, k, so.lo, so.hi)
				}
			}
			for i := range b {
				b[i] = float64(next)
			}
			loans[next] = b
			placed = append(placed, sb)
			next++
		}
		return placed
	}
	var placed []span
	chunks, runs := 0, 0
	for ; runs < 5 && (runs == 0 || len(a.chunks) != chunks); runs++ {
		chunks = len(a.chunks)
		placed = run()
		for _, c := range a.chunks {
			if len(c.free) != 1 || c.free[0] != (extent{0, len(c.buf)}) {
				t.Fatalf("everything given back, a chunk of %d entries has the free ranges %v, want one whole", len(c.buf), c.free)
			}
		}
	}
	if len(a.chunks) != chunks {
		t.Fatalf("runs %d still made chunks: %d, then %d", runs, chunks, len(a.chunks))
	}
	if chunks < 2 {
		t.Fatalf("%d chunk: the test means to fill several", chunks)
	}
	capacity := a.capacity()
	again := run()
	if len(a.chunks) != chunks || !slices.Equal(placed, again) {
		t.Errorf("a run after one that made no chunk: %d chunks, then %d; the same ranges: %v", chunks, len(a.chunks), slices.Equal(placed, again))
	}
	t.Logf("%d loans, %d chunks of %d entries in all after %d runs", len(placed), chunks, capacity, runs)
}

// TestArenaReusesAcrossSizes: freed neighbours join into one range that a
// larger request takes, and a freed range serves smaller requests of
// other sizes, without a new chunk.
func TestArenaReusesAcrossSizes(t *testing.T) {
	saved := chunkBytes
	chunkBytes = 8 * 100
	defer func() { chunkBytes = saved }()
	var a arena[float64]
	x, y, z := a.lend(30), a.lend(30), a.lend(40) // the first chunk, 100 entries, full
	if len(a.chunks) != 1 || a.capacity() != 100 {
		t.Fatalf("%d chunks of %d entries, want one of 100", len(a.chunks), a.capacity())
	}
	a.giveBack(x)
	a.giveBack(y)
	w := a.lend(60) // x and y joined
	if len(a.chunks) != 1 || &w[0] != &x[:1][0] {
		t.Errorf("a loan of 60 after two neighbours of 30 were given back: %d chunks, at %p, want one chunk, at %p", len(a.chunks), &w[0], &x[0])
	}
	a.giveBack(z)
	u, v := a.lend(25), a.lend(15) // two other sizes in z's 40
	if len(a.chunks) != 1 || &u[0] != &z[0] || spanOf(v).lo != spanOf(u).hi {
		t.Errorf("loans of 25 and 15 after one of 40 was given back: %d chunks, not in its place", len(a.chunks))
	}
	a.giveBack(w)
	a.giveBack(v)
	a.giveBack(u)
	if c := a.chunks[0]; len(c.free) != 1 || c.free[0] != (extent{0, 100}) {
		t.Errorf("all given back: free ranges %v, want [{0 100}]", c.free)
	}
	big := a.lend(101) // fits nowhere
	if len(a.chunks) != 2 || len(big) != 101 {
		t.Errorf("a loan larger than every free range: %d chunks, want 2", len(a.chunks))
	}
}

// TestArenaRefusesAStranger: giving back a buffer that is not on loan (a
// second time, or one the arena never lent) is a bug that would let two
// loans share memory; it panics.
func TestArenaRefusesAStranger(t *testing.T) {
	var a arena[float32]
	b := a.lend(10)
	a.giveBack(b)
	defer func() {
		if recover() == nil {
			t.Errorf("a buffer given back twice was taken")
		}
	}()
	a.giveBack(b)
}
