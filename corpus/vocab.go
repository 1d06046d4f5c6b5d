// Package corpus turns a text file into token ids and training windows, with
// exactly the semantics of the PyTorch reference (shared/reference/gptref.py):
// a sorted character (or word) vocabulary, a 90/10 split of the token stream,
// and overlapping windows that start every stride tokens. GPT-2's byte-level
// BPE (package bpe) is a third kind of vocabulary, fixed rather than built
// from the text.
package corpus

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/gptg/gptg/bpe"
)

// Tokenizer kinds, as written in configs and in a model file's metadata.
const (
	Char = "char"
	Word = "word"
	GPT2 = "gpt2" // GPT-2's byte-level BPE, bpe.GPT2: 50,257 tokens
	BPE  = "bpe"  // a byte-level BPE learned on the training split (LearnBPE)
)

// Vocab maps tokens to ids and back. A token's id is its index in Tokens().
// A Vocab is immutable once built, so it is safe for concurrent use.
type Vocab struct {
	kind string
	// bpe encodes and decodes for the byte-level BPE kinds, whose tokens
	// are byte strings (perhaps not whole UTF-8) and whose ids come from
	// merging, not from a lookup of the text's characters or words.
	bpe *bpe.Tokenizer
	// merges are a learned BPE's (kind "bpe"), which a model file stores.
	merges [][2]int
	tokens []string
	// Only one of the two lookups is filled, depending on kind: runes for
	// "char" avoid building a one-rune string per character of the corpus.
	runeID map[rune]int
	wordID map[string]int
	// runeTable[r] is the id of rune r, -1 if none, for the runes below
	// len(runeTable) (up to U+FFFF): encoding a corpus looks up every
	// character, and a slice is many times faster than the map.
	runeTable []int32
}

// BuildVocab returns the vocabulary of text: for "char" the sorted set of
// its Unicode code points, for "word" the sorted set of its
// whitespace-separated words. Sorting strings byte-wise equals sorting by
// code point for valid UTF-8, which is what Python's sorted(set(text)) does.
// A BPE kind's vocabulary does not depend on the text.
func BuildVocab(kind, text string) (*Vocab, error) {
	if err := checkUTF8(text); err != nil {
		return nil, fmt.Errorf("text is %w", err)
	}
	if kind == GPT2 {
		return NewGPT2Vocab()
	}
	if kind == BPE {
		return nil, errors.New("a learned BPE vocabulary is learned on a corpus's training split: use LearnBPE")
	}
	seen := map[string]bool{}
	switch kind {
	case Char:
		for _, r := range text {
			seen[string(r)] = true
		}
	case Word:
		for _, w := range strings.Fields(text) {
			seen[w] = true
		}
	default:
		return nil, unknownKind(kind)
	}
	if len(seen) == 0 {
		return nil, fmt.Errorf("text has no %s tokens to build a vocabulary from", kind)
	}
	tokens := make([]string, 0, len(seen))
	for t := range seen {
		tokens = append(tokens, t)
	}
	sort.Strings(tokens)
	return NewVocab(kind, tokens)
}

// NewGPT2Vocab returns GPT-2's vocabulary: its byte-level BPE, with ids
// equal to tiktoken's "gpt2" encoding, <|endoftext|> = 50256. A model file
// names it by kind alone; the merges ship inside gptg.
func NewGPT2Vocab() (*Vocab, error) {
	tok, err := bpe.GPT2()
	if err != nil {
		return nil, err
	}
	return newBPEVocab(GPT2, tok), nil
}

// newBPEVocab wraps a byte-level BPE tokenizer as a Vocab of kind.
func newBPEVocab(kind string, tok *bpe.Tokenizer) *Vocab {
	tokens := make([]string, tok.Size())
	for id := range tokens {
		tokens[id] = string(tok.Piece(id))
	}
	return &Vocab{kind: kind, bpe: tok, tokens: tokens}
}

// isBPE reports whether kind is a byte-level BPE, whose vocabulary is not
// built from the text.
func isBPE(kind string) bool { return kind == GPT2 }

// NewVocab rebuilds a vocabulary from its tokens in id order, as stored in a
// model file. It rejects lists that could not have come from BuildVocab in a
// way that would make ids ambiguous: duplicates, empty tokens, tokens of more
// than one character (char kind) or containing whitespace (word kind).
func NewVocab(kind string, tokens []string) (*Vocab, error) {
	if kind == GPT2 {
		return nil, errors.New("a gpt2 vocabulary is not a list of tokens: use NewGPT2Vocab")
	}
	if kind == BPE {
		return nil, errors.New("a learned BPE vocabulary is its merges, not a list of tokens: use NewLearnedVocab")
	}
	if kind != Char && kind != Word {
		return nil, unknownKind(kind)
	}
	if len(tokens) == 0 {
		return nil, fmt.Errorf("%s vocabulary is empty", kind)
	}
	v := &Vocab{kind: kind, tokens: append([]string(nil), tokens...)}
	if kind == Char {
		v.runeID = make(map[rune]int, len(tokens))
	} else {
		v.wordID = make(map[string]int, len(tokens))
	}
	// The lookup maps double as the duplicate check: a second map of the
	// tokens would cost as much again for a large vocabulary.
	dup := func(t string, j, i int) error {
		return fmt.Errorf("%s vocabulary has %q twice (ids %d and %d)", kind, t, j, i)
	}
	for i, t := range tokens {
		if t == "" {
			return nil, fmt.Errorf("%s vocabulary token %d is empty", kind, i)
		}
		if !utf8.ValidString(t) {
			return nil, fmt.Errorf("%s vocabulary token %d (%q) is not valid UTF-8", kind, i, t)
		}
		if kind == Char {
			r, size := utf8.DecodeRuneInString(t)
			if size != len(t) {
				return nil, fmt.Errorf("char vocabulary token %d (%q) is more than one character", i, t)
			}
			if j, seen := v.runeID[r]; seen {
				return nil, dup(t, j, i)
			}
			v.runeID[r] = i
			if r < 1<<16 {
				for len(v.runeTable) <= int(r) {
					v.runeTable = append(v.runeTable, -1)
				}
				v.runeTable[r] = int32(i)
			}
		} else {
			// strings.Fields splits on unicode.IsSpace, so such a token
			// could never come back out of Encode.
			if strings.IndexFunc(t, unicode.IsSpace) >= 0 {
				return nil, fmt.Errorf("word vocabulary token %d (%q) contains whitespace", i, t)
			}
			if j, seen := v.wordID[t]; seen {
				return nil, dup(t, j, i)
			}
			v.wordID[t] = i
		}
	}
	return v, nil
}

// id is the id of a token known to be in the vocabulary: the rune r for
// a char vocabulary, the word tok for a word one.
func (v *Vocab) id(tok []byte, r rune) int {
	if v.kind == Word {
		return v.wordID[string(tok)] // the lookup does not allocate
	}
	if int(r) < len(v.runeTable) {
		return int(v.runeTable[r])
	}
	return v.runeID[r]
}

// Kind is "char", "word", "gpt2" or "bpe".
func (v *Vocab) Kind() string { return v.kind }

// BPE is the byte-level BPE tokenizer behind a vocabulary of kind "gpt2"
// or "bpe", nil for the others: what a caller streaming a long text uses
// (bpe.Tokenizer.EncodeStream).
func (v *Vocab) BPE() *bpe.Tokenizer { return v.bpe }

// Merges returns a learned BPE's merges in order (merge i makes id
// 256+i), nil for the other kinds. It is a copy.
func (v *Vocab) Merges() [][2]int { return append([][2]int(nil), v.merges...) }

// Tokens returns the vocabulary in id order. It is a copy: changing it does
// not change the Vocab. A BPE token is bytes, which need not be whole
// UTF-8: GPT-2 spells "é" as two tokens of one byte each where no merge
// joins them; Decode of a sequence joins such bytes back.
func (v *Vocab) Tokens() []string { return append([]string(nil), v.tokens...) }

// Label is token id as a person reads it: a BPE piece's bytes that are not
// whole UTF-8 as <0xE2> (bpe.Readable), any other token as it is; U+FFFD
// for an id outside the vocabulary.
func (v *Vocab) Label(id int) string {
	if id < 0 || id >= len(v.tokens) {
		return string(utf8.RuneError)
	}
	if v.bpe != nil {
		return bpe.Readable([]byte(v.tokens[id]))
	}
	return v.tokens[id]
}

// Piece is token id as it is, bytes for a BPE token; "" for an id outside
// the vocabulary.
func (v *Vocab) Piece(id int) string {
	if id < 0 || id >= len(v.tokens) {
		return ""
	}
	return v.tokens[id]
}

// Size is the number of tokens, the model's vocab dimension.
func (v *Vocab) Size() int { return len(v.tokens) }

// Encode turns text into ids. Text with tokens outside the vocabulary is an
// error that counts the distinct unknown tokens and shows the first few, in
// order of appearance, so a user can see what to fix without a line of
// thousands; for words that differ from the vocabulary's only in case it
// says which one was meant. The errors read after a subject: "the prompt: …".
// A BPE vocabulary has every text's tokens; it encodes special tokens'
// texts ("<|endoftext|>") as ordinary text, so that a prompt or corpus
// quoting one cannot end a document by accident.
func (v *Vocab) Encode(text string) ([]int, error) {
	if err := checkUTF8(text); err != nil {
		return nil, err
	}
	if v.bpe != nil {
		return v.bpe.Encode(text), nil
	}
	var ids []int
	var unknown []string
	seen := map[string]bool{}
	addUnknown := func(t string) {
		if !seen[t] {
			seen[t] = true
			unknown = append(unknown, t)
		}
	}
	if v.kind == Char {
		ids = make([]int, 0, utf8.RuneCountInString(text))
		for _, r := range text {
			id, ok := v.runeID[r]
			if !ok {
				addUnknown(string(r))
			}
			ids = append(ids, id)
		}
	} else {
		words := strings.Fields(text)
		ids = make([]int, 0, len(words))
		for _, w := range words {
			id, ok := v.wordID[w]
			if !ok {
				addUnknown(w)
			}
			ids = append(ids, id)
		}
	}
	if len(unknown) > 0 {
		return nil, v.unknownError(unknown)
	}
	return ids, nil
}

// shownUnknown is how many unknown tokens an Encode error quotes.
const shownUnknown = 8

func (v *Vocab) unknownError(unknown []string) error {
	what := "character"
	if v.kind == Word {
		what = "word"
	}
	if len(unknown) > 1 {
		what += "s"
	}
	quoted := make([]string, 0, shownUnknown)
	for _, t := range unknown[:min(len(unknown), shownUnknown)] {
		quoted = append(quoted, strconv.Quote(t))
	}
	msg := fmt.Sprintf("%d %s outside the vocabulary: %s", len(unknown), what, strings.Join(quoted, ", "))
	if more := len(unknown) - shownUnknown; more > 0 {
		msg += fmt.Sprintf(" and %d more", more)
	}
	if v.kind == Word {
		if hint := v.caseHint(unknown); hint != "" {
			msg += "; " + hint
		}
	}
	return errors.New(msg)
}

// caseHint names the vocabulary's spelling of unknown words that differ
// from a known word only in case ("The" for "the"), the commonest prompt
// mistake with a lower-case corpus.
func (v *Vocab) caseHint(unknown []string) string {
	folded := map[string]string{}
	for _, t := range v.tokens {
		if _, ok := folded[strings.ToLower(t)]; !ok {
			folded[strings.ToLower(t)] = t
		}
	}
	var pairs []string
	for _, w := range unknown {
		if known, ok := folded[strings.ToLower(w)]; ok && len(pairs) < 3 {
			pairs = append(pairs, fmt.Sprintf("%q is %q", w, known))
		}
	}
	if len(pairs) == 0 {
		return ""
	}
	return "the case differs: " + strings.Join(pairs, ", ") + " in the vocabulary"
}

// Decode turns ids back into text; word tokens are joined with single
// spaces. An id outside the vocabulary (a caller bug) decodes to U+FFFD
// rather than panicking in the middle of sampling. BPE ids decode to their
// bytes joined, which are not whole UTF-8 where the ids end inside a
// character (a sampler streaming a token at a time holds those bytes back).
func (v *Vocab) Decode(ids []int) string {
	if v.bpe != nil {
		return string(v.bpe.Decode(ids))
	}
	var b strings.Builder
	for i, id := range ids {
		if v.kind == Word && i > 0 {
			b.WriteByte(' ')
		}
		if id < 0 || id >= len(v.tokens) {
			b.WriteRune(utf8.RuneError)
			continue
		}
		b.WriteString(v.tokens[id])
	}
	return b.String()
}

func unknownKind(kind string) error {
	return fmt.Errorf("unknown tokenizer %q (want %q, %q, %q or %q)", kind, Char, Word, GPT2, BPE)
}

// checkUTF8 reports the byte offset of the first invalid UTF-8 sequence,
// because ranging over such a string would silently turn it into U+FFFD.
func checkUTF8(text string) error {
	if utf8.ValidString(text) {
		return nil
	}
	for off := 0; off < len(text); {
		r, size := utf8.DecodeRuneInString(text[off:])
		if r == utf8.RuneError && size == 1 {
			return fmt.Errorf("not valid UTF-8 (bad byte 0x%02x at offset %d)", text[off], off)
		}
		off += size
	}
	return nil // unreachable: ValidString said there is a bad byte
}
