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

// chunkSize is how much EncodeStream reads at a time.
const chunkSize = 1 << 20

// EncodeStream encodes what r yields, calling emit with the ids of each
// stretch of text it has read (a slice emit must not keep). Its memory is
// about a chunk of text and its ids, whatever the length of the stream,
// unless the text has no cut (a space or newline after a letter, digit or
// punctuation) for longer: then it holds all that stretch at once. The ids
// are those Encode gives for the whole text.
func (t *Tokenizer) EncodeStream(r io.Reader, emit func(ids []int) error) error {
	buf := make([]byte, 0, chunkSize)
	var ids []int
	for eof := false; !eof; {
		if len(buf) == cap(buf) {
			buf = append(buf, make([]byte, cap(buf))...)[:len(buf)] // no cut in a full buffer: grow it
		}
		old := len(buf)
		n, err := r.Read(buf[old:cap(buf)])
		buf = buf[:old+n]
		if errors.Is(err, io.EOF) {
			eof = true
		} else if err != nil {
			return err
		}
		end := len(buf)
		if !eof {
			// Before old there was no cut, except perhaps at old itself,
			// whose next byte had not come.
			if end = lastCut(buf, old); end == 0 {
				continue
			}
		}
		ids = t.AppendEncode(ids[:0], string(buf[:end]))
		if len(ids) > 0 {
			if err := emit(ids); err != nil {
				return err
			}
		}
		buf = buf[:copy(buf, buf[end:])]
	}
	return nil
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
