package fused

import (
	"fmt"
	"math"
	"slices"
	"unsafe"
)

// arena lends ranges of a few large chunks, best fit: a request takes the
// start of the smallest free range that holds it, and a range given back
// joins its free neighbours. Buffers of every size share the chunks, so a
// gradient of (768, 3072) can take the room of freed activations of
// (512, 3072) and (512, 768) — an exact-size pool would keep both. A
// request that fits nowhere adds a chunk. A graph borrows and gives back
// in the same order on every run, from an arena whose loans have all come
// back: a run that adds no chunk finds the arena as the run before it
// did, makes the same choices and lends the same ranges, and so does every
// run after it. (The first run may leave a second run other choices, in
// chunks made after a request it placed: the second may place differently,
// and in theory add a chunk; at GPT-2 124M none is added after the first.)
type arena[F float32 | float64] struct {
	chunks []*chunk[F]
	loans  map[*F]loan[F] // by a loan's first entry
	made   map[int]int    // loans made of each size, for tests
}

type chunk[F float32 | float64] struct {
	buf  []F
	free []extent // the free ranges, by offset; no two adjacent
}

type extent struct{ off, n int }

type loan[F float32 | float64] struct {
	c   *chunk[F]
	off int
}

// chunkBytes bounds the size of a new chunk: at most this, at least the
// request, and 64 requests of its size in between (so that a small
// model's Memory stays small). GPT-2 124M, whose shards' Memories lend
// ~610 MiB each at their peak: with 64 MiB chunks ~630 MiB are made, with
// chunks of each request's size alone ~745 MiB (simulated on the
// recorded requests of a run). A variable so that a test can fill chunks.
var chunkBytes = 64 << 20

// givenBackFill, when not 0, is written over every range given back: a
// test sets it to NaN so that a read of a buffer after its loan ended
// changes the bits it computes (FillGivenBack).
var givenBackFill float64

// FillGivenBack makes every Memory write NaN over each buffer given back,
// until restore is called: a kernel or a caller that reads a buffer after
// its loan has ended then computes NaN instead of the right bits. For
// tests.
func FillGivenBack() (restore func()) {
	saved := givenBackFill
	givenBackFill = math.NaN()
	return func() { givenBackFill = saved }
}

func (a *arena[F]) lend(n int) []F {
	if n == 0 {
		return []F{}
	}
	var best *chunk[F]
	at := -1
	for _, c := range a.chunks {
		for i, e := range c.free {
			if e.n >= n && (best == nil || e.n < best.free[at].n) {
				best, at = c, i
			}
		}
	}
	if best == nil {
		size := max(n, min(chunkBytes/int(unsafe.Sizeof(F(0))), 64*n))
		best = &chunk[F]{buf: make([]F, size), free: []extent{{0, size}}}
		a.chunks = append(a.chunks, best)
		at = 0
	}
	e := best.free[at]
	if e.n == n {
		best.free = slices.Delete(best.free, at, at+1)
	} else {
		best.free[at] = extent{e.off + n, e.n - n}
	}
	b := best.buf[e.off : e.off+n : e.off+n]
	if a.loans == nil {
		a.loans, a.made = map[*F]loan[F]{}, map[int]int{}
	}
	a.made[n]++
	a.loans[&b[0]] = loan[F]{best, e.off}
	return b
}

func (a *arena[F]) giveBack(b []F) {
	if len(b) == 0 {
		return
	}
	l, ok := a.loans[&b[0]]
	if !ok {
		panic(fmt.Sprintf("fused: a buffer of %d entries given back that is not on loan", len(b)))
	}
	delete(a.loans, &b[0])
	if givenBackFill != 0 {
		for i := range b {
			b[i] = F(givenBackFill)
		}
	}
	free := l.c.free
	i, _ := slices.BinarySearchFunc(free, l.off, func(e extent, off int) int { return e.off - off })
	e := extent{l.off, len(b)}
	joinPrev := i > 0 && free[i-1].off+free[i-1].n == e.off
	joinNext := i < len(free) && e.off+e.n == free[i].off
	switch {
	case joinPrev && joinNext:
		free[i-1].n += e.n + free[i].n
		free = slices.Delete(free, i, i+1)
	case joinPrev:
		free[i-1].n += e.n
	case joinNext:
		free[i] = extent{e.off, e.n + free[i].n}
	default:
		free = slices.Insert(free, i, e)
	}
	l.c.free = free
}

// capacity is the number of entries of a's chunks.
func (a *arena[F]) capacity() int {
	n := 0
	for _, c := range a.chunks {
		n += len(c.buf)
	}
	return n
}
