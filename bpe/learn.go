package bpe

import (
	"fmt"
	"slices"
	"strings"
)

// Learning a byte-level BPE, the way minbpe's RegexTokenizer.train does:
// the text is cut into pieces by a pre-split (GPT-2's pattern), every piece
// starts as its UTF-8 bytes (ids 0..255), and each round the adjacent pair
// of ids that occurs most often within pieces becomes a new id, 256 for the
// first merge, 257 for the second, and so on. Pairs never span two pieces.
//
// Ties: of the pairs with the highest count, the one with the lowest left
// id wins, and of those the one with the lowest right id. Counts are exact
// integers and the rule is a total order, so the merges depend on nothing
// but the text and the vocabulary size: not on the machine, GOMAXPROCS, map
// order or the order of the pieces.
//
// A pair's count is the number of positions where it occurs, overlaps
// included (minbpe's get_stats: "aaa" holds (a, a) twice), while a merge
// replaces occurrences left to right without overlap ("aaa" becomes "Xa").
//
// Instead of recounting every pair after each merge, the learner keeps the
// counts and, for every pair, the distinct pieces that hold it; a merge
// rewrites only the pieces holding its pair and moves the counts by what
// changed there. The best pair comes from a max-heap whose stale entries
// (a pair whose count moved since the entry was pushed) are skipped when
// they surface.

// MinVocab is the smallest vocabulary Learn makes: the 256 byte values,
// which need no merge.
const MinVocab = 256

// LearnOptions are Learn's optional settings.
type LearnOptions struct {
	// Split cuts the text into the pieces merges stay within; nil means
	// GPT-2's pre-split.
	Split func(text string) []string
	// Progress, when set, is called with the merges done and the merges
	// to do: once before the first merge and then every ProgressEvery
	// merges and after the last. It runs on Learn's goroutine.
	Progress func(done, total int)
}

// ProgressEvery is how many merges pass between two Progress calls.
const ProgressEvery = 64

// Learn learns vocabSize-256 merges on text and returns them in the order
// learned: merge i joins the ids merges[i][0] and merges[i][1] into the id
// 256+i. See the comment at the top of this file for the rule.
func Learn(text string, vocabSize int, opt LearnOptions) ([][2]int, error) {
	if err := checkVocabSize(vocabSize); err != nil {
		return nil, err
	}
	split := opt.Split
	if split == nil {
		split = defaultSplit
	}
	return LearnCounts(CountPieces(text, split), vocabSize, opt.Progress)
}

// defaultSplit is the pre-split Learn uses when LearnOptions.Split is nil.
var defaultSplit func(string) []string

func checkVocabSize(vocabSize int) error {
	if vocabSize < MinVocab {
		return fmt.Errorf("a byte-level BPE vocabulary has at least %d tokens (the byte values), got vocab_size %d", MinVocab, vocabSize)
	}
	return nil
}

// countChunk is how much text CountPieces splits at a time: the pieces of
// one chunk are held as strings (16 bytes each, about four per piece of
// text) only until they are counted.
const countChunk = 1 << 20

// CountPieces splits text and counts how often each distinct piece occurs.
// It splits a chunk of text at a time, cutting only at a newline with a
// printable ASCII character on each side: GPT-2's pattern ends a piece
// before and after such a newline whatever follows, so the counts equal
// those of splitting the whole text at once.
func CountPieces(text string, split func(string) []string) map[string]int {
	counts := map[string]int{}
	for len(text) > 0 {
		n := chunkEnd(text, countChunk)
		for _, p := range split(text[:n]) {
			counts[p]++
		}
		text = text[n:]
	}
	return counts
}

// chunkEnd is where CountPieces cuts text: after the first safe newline
// at or past want bytes, or at the end of text.
func chunkEnd(text string, want int) int {
	for i := want; i < len(text)-1; {
		j := strings.IndexByte(text[i:len(text)-1], '\n')
		if j < 0 {
			break
		}
		i += j
		if i > 0 && printableASCII(text[i-1]) && printableASCII(text[i+1]) {
			return i + 1
		}
		i++
	}
	return len(text)
}

// printableASCII is true for the bytes '!' to '~': one character each,
// never white space, and never the start of a piece that could take the
// newline before it.
func printableASCII(c byte) bool { return c > ' ' && c < 0x7f }

// pair packs a (left, right) pair of ids so that ordering the keys orders
// the pairs by left id, then right id.
type pair uint64

func pairOf(left, right int32) pair { return pair(uint64(uint32(left))<<32 | uint64(uint32(right))) }
func (p pair) left() int32          { return int32(p >> 32) }
func (p pair) right() int32         { return int32(uint32(p)) }

// piece is one distinct piece of the text as its current ids, which are
// ids[start : start+n] of the learner's arena.
type piece struct {
	start, n int32
	weight   int // occurrences of the piece in the text
}

// learner holds the state of LearnCounts between merges.
type learner struct {
	ids    []int32 // every piece's ids, one after the other
	pieces []piece
	count  map[pair]int     // occurrences of each pair that occurs
	where  map[pair][]int32 // the pieces that hold each pair (some may no longer)
	heap   pairHeap
	delta  map[pair]int // one merge's net change of counts
}

// LearnCounts is Learn on a text already split and counted: pieces maps
// each distinct piece to its number of occurrences (CountPieces).
func LearnCounts(pieces map[string]int, vocabSize int, progress func(done, total int)) ([][2]int, error) {
	if err := checkVocabSize(vocabSize); err != nil {
		return nil, err
	}
	total := vocabSize - MinVocab
	if progress != nil {
		progress(0, total)
	}
	l := newLearner(pieces)
	merges := make([][2]int, 0, total)
	for len(merges) < total {
		p, ok := l.best()
		if !ok {
			return nil, fmt.Errorf("the text allows only %d merges (vocab_size at most %d), not the %d vocab_size %d asks for: use a smaller vocab_size or more text",
				len(merges), MinVocab+len(merges), total, vocabSize)
		}
		l.merge(p, int32(MinVocab+len(merges)))
		merges = append(merges, [2]int{int(p.left()), int(p.right())})
		if progress != nil && (len(merges)%ProgressEvery == 0 || len(merges) == total) {
			progress(len(merges), total)
		}
	}
	return merges, nil
}

func newLearner(counts map[string]int) *learner {
	// Pieces in sorted order: the merges would be the same in any order,
	// but the work done and the memory laid out should not vary by run.
	texts := make([]string, 0, len(counts))
	size := 0
	for t := range counts {
		texts = append(texts, t)
		size += len(t)
	}
	slices.Sort(texts)
	l := &learner{
		ids:    make([]int32, 0, size),
		pieces: make([]piece, 0, len(texts)),
		count:  map[pair]int{},
		where:  map[pair][]int32{},
		delta:  map[pair]int{},
	}
	for i, t := range texts {
		w := counts[t]
		start := int32(len(l.ids))
		for j := 0; j < len(t); j++ {
			l.ids = append(l.ids, int32(t[j]))
		}
		l.pieces = append(l.pieces, piece{start: start, n: int32(len(t)), weight: w})
		seq := l.ids[start:]
		for j := 0; j+1 < len(seq); j++ {
			p := pairOf(seq[j], seq[j+1])
			l.count[p] += w
			l.note(p, int32(i))
		}
	}
	l.heap = make(pairHeap, 0, len(l.count))
	for p, c := range l.count {
		l.heap = append(l.heap, heapEntry{count: c, pair: p})
	}
	l.heap.init()
	return l
}

// note records that piece i holds pair p. Pieces are noted in turn, so a
// piece already noted for p is the list's last.
func (l *learner) note(p pair, i int32) {
	list := l.where[p]
	if len(list) == 0 || list[len(list)-1] != i {
		l.where[p] = append(list, i)
	}
}

// best pops the pair to merge next: the highest count, ties to the lowest
// pair. It is false when no pair is left.
func (l *learner) best() (pair, bool) {
	for len(l.heap) > 0 {
		e := l.heap.pop()
		if l.count[e.pair] == e.count {
			return e.pair, true
		}
	}
	return 0, false
}

// merge replaces every occurrence of p by id, in the pieces that hold p,
// and moves the counts of the pairs around it.
func (l *learner) merge(p pair, id int32) {
	a, b := p.left(), p.right()
	list := l.where[p]
	delete(l.where, p)
	clear(l.delta)
	for _, i := range list {
		pc := &l.pieces[i]
		seq := l.ids[pc.start : pc.start+pc.n]
		if !holds(seq, a, b) {
			continue // lost p to an earlier merge
		}
		w := pc.weight
		for j := 0; j+1 < len(seq); j++ {
			l.delta[pairOf(seq[j], seq[j+1])] -= w
		}
		n := 0
		for j := 0; j < len(seq); n++ {
			if j+1 < len(seq) && seq[j] == a && seq[j+1] == b {
				seq[n] = id
				j += 2
			} else {
				seq[n] = seq[j]
				j++
			}
		}
		seq = seq[:n]
		pc.n = int32(n)
		for j := 0; j+1 < len(seq); j++ {
			q := pairOf(seq[j], seq[j+1])
			l.delta[q] += w
			// Only pairs with the new id are new to the piece: any other
			// pair in it was next to each other before the merge too.
			if seq[j] == id || seq[j+1] == id {
				l.note(q, i)
			}
		}
	}
	for q, d := range l.delta {
		if d == 0 {
			continue
		}
		c := l.count[q] + d
		if c == 0 {
			// Gone for good: merges only ever make the new id, so two
			// ids that stop being neighbours never meet again.
			delete(l.count, q)
			delete(l.where, q)
			continue
		}
		l.count[q] = c
		l.heap.push(heapEntry{count: c, pair: q})
	}
}

// holds reports whether seq has a followed by b.
func holds(seq []int32, a, b int32) bool {
	for j := 0; j+1 < len(seq); j++ {
		if seq[j] == a && seq[j+1] == b {
			return true
		}
	}
	return false
}

// heapEntry is a pair with the count it had when pushed.
type heapEntry struct {
	count int
	pair  pair
}

// before orders the heap: higher count first, then the lower pair.
func (e heapEntry) before(f heapEntry) bool {
	if e.count != f.count {
		return e.count > f.count
	}
	return e.pair < f.pair
}

// pairHeap is a binary heap of entries, the best (see before) at the root.
type pairHeap []heapEntry

func (h pairHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *pairHeap) push(e heapEntry) {
	*h = append(*h, e)
	s := *h
	for i := len(s) - 1; i > 0; {
		parent := (i - 1) / 2
		if !s[i].before(s[parent]) {
			break
		}
		s[i], s[parent] = s[parent], s[i]
		i = parent
	}
}

func (h *pairHeap) pop() heapEntry {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	*h = s[:last]
	h.down(0)
	return top
}

func (h pairHeap) down(i int) {
	for {
		best := i
		if l := 2*i + 1; l < len(h) && h[l].before(h[best]) {
			best = l
		}
		if r := 2*i + 2; r < len(h) && h[r].before(h[best]) {
			best = r
		}
		if best == i {
			return
		}
		h[i], h[best] = h[best], h[i]
		i = best
	}
}
