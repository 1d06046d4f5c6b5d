package bpe

import (
	"math"
	"strings"
)

// encoder is one goroutine's cache and scratch space: Encode takes one from
// the Tokenizer's pool, so that concurrent callers share nothing mutable.
type encoder struct {
	t *Tokenizer
	// cache maps a piece already seen to its ids, cached[off:off+n]: the
	// same words come back all through a text, and a map lookup is far
	// cheaper than merging them again.
	cache  map[string]span
	cached []uint32

	ids    []uint32 // the piece being merged, one id per surviving token
	merged []uint32 // merged[i]: what ids[i] and ids[i+1] make, noMerge if nothing

	// For long pieces (mergeLong): a linked list over byte positions and a
	// heap of candidate merges.
	next, prev []int32
	heap       []uint64
}

type span struct{ off, n uint32 }

const (
	noMerge = math.MaxUint32
	// Pieces up to cacheableLen bytes are cached; longer ones are rare and
	// would let one long run of text fill the cache.
	cacheableLen = 64
	// The cache is emptied when it holds this many pieces or ids, which
	// bounds an encoder's memory whatever the text.
	cacheMaxPieces = 1 << 16
	cacheMaxIDs    = 1 << 20
	// Pieces longer than this are merged with a heap in O(n log n) instead
	// of rescanning every pair after each merge, O(n²).
	longPiece = 128
)

func (t *Tokenizer) newEncoder() *encoder {
	return &encoder{t: t, cache: make(map[string]span)}
}

// appendText appends the ids of text to dst.
func (e *encoder) appendText(dst []int, text string) []int {
	for len(text) > 0 {
		n := NextPiece(text)
		dst = e.appendPiece(dst, text[:n])
		text = text[n:]
	}
	return dst
}

// appendPiece appends the ids of one pre-split piece to dst.
func (e *encoder) appendPiece(dst []int, piece string) []int {
	t := e.t
	if len(piece) == 1 {
		return append(dst, int(t.byteID[piece[0]]))
	}
	cacheable := len(piece) <= cacheableLen
	if cacheable {
		if s, ok := e.cache[piece]; ok {
			for _, id := range e.cached[s.off : s.off+s.n] {
				dst = append(dst, int(id))
			}
			return dst
		}
	}
	var ids []uint32
	if len(piece) > longPiece {
		ids = e.mergeLong(piece)
	} else {
		ids = e.mergeShort(piece)
	}
	for _, id := range ids {
		dst = append(dst, int(id))
	}
	if cacheable {
		if len(e.cache) >= cacheMaxPieces || len(e.cached)+len(ids) > cacheMaxIDs {
			clear(e.cache)
			e.cached = e.cached[:0]
		}
		// A copy: the key must not keep the caller's whole text alive.
		e.cache[strings.Clone(piece)] = span{uint32(len(e.cached)), uint32(len(ids))}
		e.cached = append(e.cached, ids...)
	}
	return dst
}

// mergeShort merges piece by rescanning its pairs for the earliest merge,
// GPT-2's loop: fast for the short pieces that are nearly all of a text.
// The result is in e.ids, valid until the next call.
func (e *encoder) mergeShort(piece string) []uint32 {
	t := e.t
	ids, merged := e.ids[:0], e.merged[:0]
	for i := 0; i < len(piece); i++ {
		ids = append(ids, t.byteID[piece[i]])
	}
	for i := 0; i+1 < len(ids); i++ {
		merged = append(merged, t.merge(ids[i], ids[i+1]))
	}
	for {
		// The earliest merge, leftmost among equals (the same pair twice).
		best, at := uint32(noMerge), -1
		for i, m := range merged {
			if m < best {
				best, at = m, i
			}
		}
		if at < 0 {
			break
		}
		ids[at] = best
		ids = append(ids[:at+1], ids[at+2:]...)
		merged = append(merged[:at], merged[at+1:]...)
		if at > 0 {
			merged[at-1] = t.merge(ids[at-1], ids[at])
		}
		if at < len(merged) {
			merged[at] = t.merge(ids[at], ids[at+1])
		}
	}
	e.ids, e.merged = ids, merged
	return ids
}

// merge is the id a and b make, noMerge if they are not a merge.
func (t *Tokenizer) merge(a, b uint32) uint32 {
	if m, ok := t.pairs.get(a, b); ok {
		return m
	}
	return noMerge
}

// mergeLong merges piece as mergeShort does, in O(n log n): the tokens are
// a linked list over the byte positions where they start, and candidate
// merges sit in a min-heap keyed by (merged id, position) — the earliest
// merge first, the leftmost among equals, the order mergeShort takes.
// An entry whose pair has changed since it was pushed is skipped when it
// comes up: each merge makes a distinct id, so an entry is current exactly
// when its pair still makes its id.
func (e *encoder) mergeLong(piece string) []uint32 {
	t := e.t
	n := len(piece)
	ids := grow(e.ids, n)
	next, prev := grow(e.next, n), grow(e.prev, n)
	h := e.heap[:0]
	for i := range n {
		ids[i] = t.byteID[piece[i]]
		next[i], prev[i] = int32(i+1), int32(i-1)
	}
	next[n-1] = -1
	for i := 0; i+1 < n; i++ {
		if m := t.merge(ids[i], ids[i+1]); m != noMerge {
			h = append(h, uint64(m)<<32|uint64(i))
		}
	}
	heapify(h)
	for len(h) > 0 {
		top := h[0]
		h = heapPop(h)
		m, at := uint32(top>>32), int32(uint32(top))
		r := next[at]
		if ids[at] == noMerge || r < 0 || t.merge(ids[at], ids[r]) != m {
			continue // stale: one of its tokens has merged since
		}
		ids[at], ids[r] = m, noMerge
		next[at] = next[r]
		if next[r] >= 0 {
			prev[next[r]] = at
		}
		if p := prev[at]; p >= 0 {
			if pm := t.merge(ids[p], m); pm != noMerge {
				h = heapPush(h, uint64(pm)<<32|uint64(p))
			}
		}
		if nx := next[at]; nx >= 0 {
			if nm := t.merge(m, ids[nx]); nm != noMerge {
				h = heapPush(h, uint64(nm)<<32|uint64(at))
			}
		}
	}
	out := ids[:0]
	for i := int32(0); i >= 0; i = next[i] {
		out = append(out, ids[i])
	}
	e.ids, e.next, e.prev, e.heap = ids, next, prev, h
	return out
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// A binary min-heap of uint64s; container/heap's interface calls would cost
// more than the comparisons.

func heapify(h []uint64) {
	for i := len(h)/2 - 1; i >= 0; i-- {
		siftDown(h, i)
	}
}

func heapPush(h []uint64, v uint64) []uint64 {
	h = append(h, v)
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if h[p] <= h[i] {
			break
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
	return h
}

func heapPop(h []uint64) []uint64 {
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	siftDown(h, 0)
	return h
}

func siftDown(h []uint64, i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		c := l
		if r := l + 1; r < len(h) && h[r] < h[l] {
			c = r
		}
		if h[i] <= h[c] {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}
