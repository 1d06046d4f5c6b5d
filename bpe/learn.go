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

// ProgressEvery is how many merges pass between two progress calls.
const ProgressEvery = 64

// Learn learns vocabSize-256 merges on text, pre-split with GPT-2's
// pattern (NextPiece), and returns them in the order learned: merge i joins
// the ids merges[i][0] and merges[i][1] into the id 256+i. See the comment
// at the top of this file for the rule. progress, when not nil, is called
// with the merges done and the merges to do: once before the first merge,
// every ProgressEvery merges and after the last; an error it returns
// stops the learning and is returned.
func Learn(text string, vocabSize int, progress func(done, total int) error) ([][2]int, error) {
	if err := checkVocabSize(vocabSize); err != nil {
		return nil, err
	}
	var c PieceCounter
	c.AddString(text)
	merges, _, err := LearnCounts(c.Counts(), vocabSize, progress)
	return merges, err
}

// NewLearned is the tokenizer of learned merges: byte b is id b, merge i
// makes id 256+i, and there are no special tokens.
func NewLearned(merges [][2]int) (*Tokenizer, error) {
	var bytes [256]int
	for b := range bytes {
		bytes[b] = b
	}
	return New(bytes, merges, nil)
}

// TooFewPairsError is the error of learning on a text that runs out of
// pairs to merge (every piece is one token) before VocabSize.
type TooFewPairsError struct {
	Merges    int // the merges the text allows
	VocabSize int // asked for
}

func (e *TooFewPairsError) Error() string {
	return fmt.Sprintf("the text allows only %d merges (vocab_size at most %d), not the %d vocab_size %d asks for: use a smaller vocab_size or more text",
		e.Merges, MinVocab+e.Merges, e.VocabSize-MinVocab, e.VocabSize)
}

func checkVocabSize(vocabSize int) error {
	if vocabSize < MinVocab {
		return fmt.Errorf("a byte-level BPE vocabulary has at least %d tokens (the byte values), got vocab_size %d", MinVocab, vocabSize)
	}
	return nil
}

// PieceCounter counts the distinct pieces of a text (GPT-2's pre-split)
// given a part at a time, so that a corpus need not be held whole. The
// zero value counts every piece; Limit stops it early.
type PieceCounter struct {
	// Limit, when above 0, ends the text at its first cut (see LastCut: a
	// space or newline after a character that is not one) at or after
	// byte Limit; what follows is not counted. Each side of a cut splits
	// as it does in the whole text, so the tokens of the part counted are
	// the first tokens of the whole text.
	Limit int64

	index  map[string]int32 // piece → its place in counts
	counts []int
	carry  []byte // the text after the last cut
	offset int64  // of carry in the text
	full   bool   // Limit's cut has been found
}

// Add counts the pieces of the text's next part. Parts must be cut
// between characters (UTF-8): a cut character would change the class of
// its bytes. What follows the part's last cut, a piece that more text
// could change, is kept until the next part or Counts.
func (c *PieceCounter) Add(part []byte) {
	if c.full {
		return
	}
	if len(c.carry) > 0 {
		part = append(c.carry, part...)
	}
	c.addString(string(part))
}

// AddString is Add for a part held as a string.
func (c *PieceCounter) AddString(part string) {
	if c.full {
		return
	}
	if len(c.carry) > 0 {
		part = string(c.carry) + part
	}
	c.addString(part)
}

// addString counts the pieces of text, which starts at c.offset, up to
// its last cut or Limit's, and carries the rest.
func (c *PieceCounter) addString(text string) {
	cut := LastCut(text)
	// While the counter is not full, offset is below Limit: it moves to
	// cuts before it only.
	if from := c.Limit - c.offset; c.Limit > 0 && int64(cut) >= from {
		cut = firstCut(text, int(from))
		c.full = true
	}
	c.count(text[:cut])
	c.carry = append(c.carry[:0], text[cut:]...)
	c.offset += int64(cut)
}

// CutBetween reports whether a text can be cut between the bytes prev and
// next: LastCut's rule, for a reader that looks for a cut across the end
// of one part and the start of the next.
func CutBetween(prev, next byte) bool { return isCut([]byte{prev, next}, 1) }

// firstCut is the first cut of text at or after from, which must have one.
func firstCut(text string, from int) int {
	for i := max(from, 1); ; i++ {
		if isCut(text, i) {
			return i
		}
	}
}

// count counts the pieces of text.
func (c *PieceCounter) count(text string) {
	for len(text) > 0 {
		n := NextPiece(text)
		c.note(text[:n])
		text = text[n:]
	}
}

// Full reports whether the counts are final before the end of the text:
// Limit's cut has been found, and more text would not be counted.
func (c *PieceCounter) Full() bool { return c.full }

// End is the length of the text counted: up to Limit's cut, or all of it
// if it has none. It is final once Counts is called.
func (c *PieceCounter) End() int64 { return c.offset }

// note counts one occurrence of piece.
func (c *PieceCounter) note(piece string) {
	if i, ok := c.index[piece]; ok {
		c.counts[i]++
		return
	}
	if c.index == nil {
		c.index = map[string]int32{}
	}
	c.index[strings.Clone(piece)] = int32(len(c.counts))
	c.counts = append(c.counts, 1)
}

// Counts ends the text and returns how often each distinct piece occurs.
func (c *PieceCounter) Counts() map[string]int {
	if !c.full {
		c.count(string(c.carry))
		c.offset += int64(len(c.carry))
	}
	c.carry = nil
	out := make(map[string]int, len(c.counts))
	for p, i := range c.index {
		out[p] = c.counts[i]
	}
	return out
}

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
// each distinct piece to its number of occurrences (PieceCounter). It
// also returns how often each merge's pair occurred when it was merged.
func LearnCounts(pieces map[string]int, vocabSize int, progress func(done, total int) error) (merges [][2]int, counts []int, err error) {
	if err := checkVocabSize(vocabSize); err != nil {
		return nil, nil, err
	}
	total := vocabSize - MinVocab
	if progress != nil {
		if err := progress(0, total); err != nil {
			return nil, nil, err
		}
	}
	l := newLearner(pieces)
	merges, counts = make([][2]int, 0, total), make([]int, 0, total)
	for len(merges) < total {
		p, ok := l.best()
		if !ok {
			return nil, nil, &TooFewPairsError{Merges: len(merges), VocabSize: vocabSize}
		}
		counts = append(counts, l.count[p])
		l.merge(p, int32(MinVocab+len(merges)))
		merges = append(merges, [2]int{int(p.left()), int(p.right())})
		if progress != nil && (len(merges)%ProgressEvery == 0 || len(merges) == total) {
			if err := progress(len(merges), total); err != nil {
				return nil, nil, err
			}
		}
	}
	return merges, counts, nil
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
