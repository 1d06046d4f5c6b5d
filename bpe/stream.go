package bpe

import (
	"errors"
	"io"
	"sync"
)

// A piece never holds a character other than whitespace followed by a
// whitespace character: the pattern's runs of letters, numbers and the rest
// stop at whitespace, and whitespace joins a piece only at its start. So
// text can be cut between such two characters and each side split (and
// encoded) alone, whatever comes before or after: the pieces are those of
// the whole text. The cut points looked for are the common ASCII ones.

// isCut reports whether text can be cut before byte i (0 < i < len(text)).
func isCut[T string | []byte](text T, i int) bool {
	switch text[i] {
	case ' ', '\n', '\t', '\r':
		b := text[i-1]
		return b < 0x80 && bmpClass[b] != space
	}
	return false
}

// LastCut returns the largest i > 0 before which text can be cut so that
// text[:i] splits into the same pieces whatever follows it, or 0 if there
// is no such place. A reader of a long stream encodes up to LastCut and
// keeps the rest for the next read.
func LastCut(text string) int { return lastCut(text, 1) }

// lastCut is LastCut looking no lower than from.
func lastCut[T string | []byte](text T, from int) int {
	for i := len(text) - 1; i >= max(from, 1); i-- {
		if isCut(text, i) {
			return i
		}
	}
	return 0
}

// Stream encodes a text given a part at a time (Write), holding back what
// follows the last cut of what it has, so that its ids are those Encode
// gives for the whole text. Its memory is a part and its ids, whatever the
// length of the text, unless the text has no cut (a space or newline after
// a letter, digit or punctuation) for longer: then it holds all of that
// stretch.
type Stream struct {
	t       *Tokenizer
	pending []byte
	ids     []int
}

// NewStream starts encoding a text a part at a time.
func (t *Tokenizer) NewStream() *Stream { return &Stream{t: t} }

// Write adds p to the text and returns the ids of the text up to its last
// cut not yet returned, maybe none; they are valid until the next call.
func (s *Stream) Write(p []byte) []int {
	old := len(s.pending)
	s.pending = append(s.pending, p...)
	// Before old there was no cut, but perhaps at old itself, whose next
	// byte had not come.
	end := lastCut(s.pending, old)
	if end == 0 {
		return nil
	}
	s.ids = s.t.AppendEncode(s.ids[:0], string(s.pending[:end]))
	s.pending = s.pending[:copy(s.pending, s.pending[end:])]
	return s.ids
}

// Flush returns the ids of the rest of the text, and starts a new one.
func (s *Stream) Flush() []int {
	s.ids = s.t.AppendEncode(s.ids[:0], string(s.pending))
	s.pending = s.pending[:0]
	return s.ids
}

// chunkSize is how much EncodeStream reads at a time.
const chunkSize = 1 << 20

// EncodeStream encodes what r yields with a Stream, calling emit with the
// ids of each stretch of text it has read (a slice emit must not keep).
func (t *Tokenizer) EncodeStream(r io.Reader, emit func(ids []int) error) error {
	s := t.NewStream()
	buf := make([]byte, chunkSize)
	for {
		n, err := r.Read(buf)
		if ids := s.Write(buf[:n]); len(ids) > 0 {
			if err := emit(ids); err != nil {
				return err
			}
		}
		if errors.Is(err, io.EOF) {
			if ids := s.Flush(); len(ids) > 0 {
				return emit(ids)
			}
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// EncodeParallel is Encode with the text cut into stretches encoded by up
// to workers goroutines at once; the ids are the same.
func (t *Tokenizer) EncodeParallel(text string, workers int) []int {
	const minChunk = 64 << 10
	if workers < 2 || len(text) < 2*minChunk {
		return t.Encode(text)
	}
	n := min(4*workers, len(text)/minChunk) // a few per worker evens out their speeds
	var cuts []int
	for i := 1; i < n; i++ {
		target := i * len(text) / n
		c := LastCut(text[:target])
		if c > 0 && (len(cuts) == 0 || c > cuts[len(cuts)-1]) {
			cuts = append(cuts, c)
		}
	}
	cuts = append(cuts, len(text))
	parts := make([][]int, len(cuts))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, len(cuts)) {
		wg.Go(func() {
			for i := range next {
				start := 0
				if i > 0 {
					start = cuts[i-1]
				}
				parts[i] = t.Encode(text[start:cuts[i]])
			}
		})
	}
	for i := range cuts {
		next <- i
	}
	close(next)
	wg.Wait()
	total := 0
	for _, p := range parts {
		total += len(p)
	}
	ids := make([]int, 0, total)
	for _, p := range parts {
		ids = append(ids, p...)
	}
	return ids
}
