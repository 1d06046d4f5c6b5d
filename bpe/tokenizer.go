// Package bpe is byte-level byte-pair encoding, the tokenizer of GPT-2: it
// turns bytes into token ids and back. A Tokenizer is 256 byte tokens,
// an ordered list of merges (pairs of ids, each making a new id) and
// optional special tokens such as GPT-2's <|endoftext|>.
//
// Encoding splits the text with GPT-2's pre-split pattern (NextPiece), then
// in each piece starts from one token per byte and repeatedly merges the
// adjacent pair whose merge came first in the list, until no adjacent pair
// is a merge: the algorithm of GPT-2's encoder.py and of minbpe. GPT2()
// gives ids equal to tiktoken's "gpt2" encoding (r50k_base); the golden
// tests compare them on every built-in corpus.
package bpe

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// Tokenizer is a byte-level BPE vocabulary. It is immutable once built and
// safe for concurrent use.
type Tokenizer struct {
	// pieceBytes[pieceOff[id]:pieceOff[id+1]] are the bytes of token id:
	// one allocation for the whole vocabulary.
	pieceBytes []byte
	pieceOff   []uint32

	byteID [256]uint32 // the token of each byte value
	// Merge i makes id firstMerge+i, so among merged ids a smaller id is
	// an earlier merge: comparing the ids compares the ranks.
	pairs    *pairTable
	nMerges  int
	specials []special // sorted by text
	size     int

	encoders sync.Pool // *encoder: a cache and scratch space per goroutine
}

type special struct {
	text string
	id   int
}

// firstMerge is the id the first merge makes: ids 0..255 are the bytes.
const firstMerge = 256

// New builds a tokenizer from the id of each byte value (a permutation of
// 0..255: GPT-2's is not in byte order, a learned BPE's usually is), the
// merges in order — merge i joins the tokens merges[i][0] and merges[i][1]
// into the new id 256+i — and special tokens, whose ids must be the ones
// following the merges (256+len(merges), ... in any order). It returns an
// error for a merge naming an id not yet made, a pair merged twice, a
// byte table that is not a permutation, or specials that are empty,
// repeated or numbered outside that range.
func New(byteIDs [256]int, merges [][2]int, specials map[string]int) (*Tokenizer, error) {
	const maxID = 1<<31 - 1
	if len(merges) > maxID-firstMerge-len(specials) {
		return nil, fmt.Errorf("bpe: %d merges are too many", len(merges))
	}
	t := &Tokenizer{nMerges: len(merges), size: firstMerge + len(merges) + len(specials)}
	seen := [256]bool{}
	for b, id := range byteIDs {
		if id < 0 || id > 255 {
			return nil, fmt.Errorf("bpe: byte 0x%02x has id %d, want 0..255", b, id)
		}
		if seen[id] {
			return nil, fmt.Errorf("bpe: two bytes have id %d", id)
		}
		seen[id] = true
		t.byteID[b] = uint32(id)
	}

	// Pieces in id order: the bytes first, then each merge's two pieces.
	t.pieceOff = make([]uint32, 1, t.size+1)
	var byteOf [256]byte
	for b, id := range byteIDs {
		byteOf[id] = byte(b)
	}
	for id := range 256 {
		t.pieceBytes = append(t.pieceBytes, byteOf[id])
		t.pieceOff = append(t.pieceOff, uint32(len(t.pieceBytes)))
	}
	t.pairs = newPairTable(len(merges))
	for i, m := range merges {
		id := firstMerge + i
		for _, part := range m {
			if part < 0 || part >= id {
				return nil, fmt.Errorf("bpe: merge %d (%d, %d) names id %d, which is not made before it (ids 0..%d are)", i, m[0], m[1], part, id-1)
			}
		}
		if !t.pairs.add(uint32(m[0]), uint32(m[1]), uint32(id)) {
			prev, _ := t.pairs.get(uint32(m[0]), uint32(m[1]))
			return nil, fmt.Errorf("bpe: merge %d (%d, %d) repeats merge %d", i, m[0], m[1], prev-firstMerge)
		}
		if len(t.pieceBytes) > maxID-len(t.rawPiece(m[0]))-len(t.rawPiece(m[1])) {
			return nil, fmt.Errorf("bpe: the merges' pieces are longer than 2 GB in all")
		}
		t.pieceBytes = append(t.pieceBytes, t.rawPiece(m[0])...)
		t.pieceBytes = append(t.pieceBytes, t.rawPiece(m[1])...)
		t.pieceOff = append(t.pieceOff, uint32(len(t.pieceBytes)))
	}

	first := firstMerge + len(merges)
	byID := make([]string, len(specials))
	for text, id := range specials {
		if text == "" {
			return nil, errors.New("bpe: a special token is empty")
		}
		if id < first || id >= t.size {
			return nil, fmt.Errorf("bpe: special token %q has id %d, want %d..%d (the ids after the merges)", text, id, first, t.size-1)
		}
		if prev := byID[id-first]; prev != "" {
			return nil, fmt.Errorf("bpe: special tokens %q and %q have the same id %d", prev, text, id)
		}
		byID[id-first] = text
	}
	for i, text := range byID {
		t.pieceBytes = append(t.pieceBytes, text...)
		t.pieceOff = append(t.pieceOff, uint32(len(t.pieceBytes)))
		t.specials = append(t.specials, special{text, first + i})
	}
	slices.SortFunc(t.specials, func(a, b special) int { return strings.Compare(a.text, b.text) })
	t.encoders.New = func() any { return t.newEncoder() }
	return t, nil
}

// rawPiece is the bytes of id, shared with the tokenizer.
func (t *Tokenizer) rawPiece(id int) []byte {
	end := t.pieceOff[id+1]
	return t.pieceBytes[t.pieceOff[id]:end:end]
}

// Size is the number of token ids, the model's vocabulary dimension.
func (t *Tokenizer) Size() int { return t.size }

// Merges is the number of merges.
func (t *Tokenizer) Merges() int { return t.nMerges }

// Piece returns a copy of the bytes of token id, nil for an id outside
// 0..Size()-1. A piece need not be whole UTF-8: GPT-2 splits a character of
// several bytes between tokens where no merge joins them.
func (t *Tokenizer) Piece(id int) []byte {
	if id < 0 || id >= t.size {
		return nil
	}
	return slices.Clone(t.rawPiece(id))
}

// Special returns the id of special token text, and whether there is one.
func (t *Tokenizer) Special(text string) (int, bool) {
	i, ok := slices.BinarySearchFunc(t.specials, text, func(s special, text string) int { return strings.Compare(s.text, text) })
	if !ok {
		return 0, false
	}
	return t.specials[i].id, true
}

// Decode returns the bytes of ids joined. An id outside the vocabulary (a
// caller's bug) decodes to U+FFFD instead of stopping a sampler midway.
func (t *Tokenizer) Decode(ids []int) []byte { return t.AppendDecode(nil, ids) }

// AppendDecode appends the bytes of ids to dst, as Decode.
func (t *Tokenizer) AppendDecode(dst []byte, ids []int) []byte {
	// The length first, so that dst grows once: appending a piece at a
	// time would copy a long text several times as it doubles.
	n := 0
	for _, id := range ids {
		if id < 0 || id >= t.size {
			n += utf8.UTFMax
			continue
		}
		n += len(t.rawPiece(id))
	}
	dst = slices.Grow(dst, n)
	for _, id := range ids {
		if id < 0 || id >= t.size {
			dst = utf8.AppendRune(dst, utf8.RuneError)
			continue
		}
		dst = append(dst, t.rawPiece(id)...)
	}
	return dst
}

// Encode returns the token ids of text. Special tokens' texts are encoded
// as ordinary text, like tiktoken's encode_ordinary: a corpus that quotes
// "<|endoftext|>" cannot end a document by accident. Text need not be
// valid UTF-8: a byte outside it is one character of its own to the
// pre-split, and decodes back to itself.
func (t *Tokenizer) Encode(text string) []int {
	// English is about 4 bytes a token: room for most texts at once, the
	// slice not regrown (and copied) a dozen times on the way.
	return t.AppendEncode(make([]int, 0, len(text)/4+16), text)
}

// AppendEncode appends the token ids of text to dst, as Encode.
func (t *Tokenizer) AppendEncode(dst []int, text string) []int {
	e := t.encoders.Get().(*encoder)
	dst = e.appendText(dst, text)
	t.encoders.Put(e)
	return dst
}

// EncodeWithSpecial is Encode, except that the texts of special tokens
// become their ids (tiktoken's encode with allowed_special="all"); where
// two specials start at the same place the longer wins.
func (t *Tokenizer) EncodeWithSpecial(text string) []int {
	var ids []int
	for len(text) > 0 {
		at, sp := t.nextSpecial(text)
		ids = t.AppendEncode(ids, text[:at])
		if sp == nil {
			break
		}
		ids = append(ids, sp.id)
		text = text[at+len(sp.text):]
	}
	return ids
}

// nextSpecial finds the first special token in text: its offset and
// itself, or len(text) and nil.
func (t *Tokenizer) nextSpecial(text string) (int, *special) {
	at, found := len(text), (*special)(nil)
	for i := range t.specials {
		sp := &t.specials[i]
		j := strings.Index(text[:min(len(text), at+len(sp.text))], sp.text)
		if j < 0 {
			continue
		}
		if j < at || len(sp.text) > len(found.text) {
			at, found = j, sp
		}
	}
	return at, found
}
