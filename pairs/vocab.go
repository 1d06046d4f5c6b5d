package pairs

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/gptg/gptg/internal/quote"
)

// Vocab maps one side's words to ids: the four Specials first, then every
// word seen at least MinCount times in the training pairs, most frequent
// first (ties in byte order, so the same pairs give the same ids).
type Vocab struct {
	words []string
	ids   map[string]int
}

// BuildVocab makes a vocabulary from tokenized sentences, keeping words
// seen at least minCount times.
func BuildVocab(sentences [][]string, minCount int) *Vocab {
	counts := map[string]int{}
	for _, s := range sentences {
		for _, w := range s {
			counts[w]++
		}
	}
	var kept []string
	for w, n := range counts {
		if n >= minCount && !slices.Contains(Specials, w) {
			kept = append(kept, w)
		}
	}
	slices.SortFunc(kept, func(a, b string) int {
		if c := cmp.Compare(counts[b], counts[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	v, _ := NewVocab(append(slices.Clone(Specials), kept...)) // cannot fail: specials first, words distinct
	return v
}

// NewVocab rebuilds a vocabulary from its word list, as a model file stores
// it: the Specials first, then distinct words.
func NewVocab(words []string) (*Vocab, error) {
	if len(words) < len(Specials) || !slices.Equal(words[:len(Specials)], Specials) {
		return nil, fmt.Errorf("a pairs vocabulary starts with %q", Specials)
	}
	v := &Vocab{words: slices.Clone(words), ids: make(map[string]int, len(words))}
	for i, w := range words {
		if _, dup := v.ids[w]; dup {
			return nil, fmt.Errorf("word %q is in the vocabulary twice (ids %d and %d)", w, v.ids[w], i)
		}
		v.ids[w] = i
	}
	return v, nil
}

// Size is the number of ids, specials included.
func (v *Vocab) Size() int { return len(v.words) }

// Words returns the word of every id, in id order.
func (v *Vocab) Words() []string { return slices.Clone(v.words) }

// ID returns w's id, or UNK.
func (v *Vocab) ID(w string) int {
	if id, ok := v.ids[w]; ok {
		return id
	}
	return UNK
}

// Encode maps words to ids; words the vocabulary lacks become UNK.
func (v *Vocab) Encode(words []string) []int {
	ids := make([]int, len(words))
	for i, w := range words {
		ids[i] = v.ID(w)
	}
	return ids
}

// Decode maps ids back to words, stopping at the first EOS and leaving out
// PAD and SOS; UNK reads as "<unk>". An id outside the vocabulary is an
// error of the caller's and panics.
func (v *Vocab) Decode(ids []int) []string {
	var words []string
	for _, id := range ids {
		switch id {
		case EOS:
			return words
		case PAD, SOS:
			continue
		}
		words = append(words, v.words[id])
	}
	return words
}

// CheckWords checks a vocabulary read from a file (a model's metadata):
// after the Specials, every word must be one Tokenize makes — lower case,
// one run of letters and digits or one other character, no space — since
// no other word can ever be looked up, and a damaged list would give ids
// to the wrong words without a sign.
func CheckWords(words []string) error {
	for i, w := range words {
		if i < len(Specials) {
			continue
		}
		if got := Tokenize(w); len(got) != 1 || got[0] != w {
			return fmt.Errorf("word %d, %s, is not one the tokenizer makes (lower case, one word, no spaces): the list is damaged", i, quote.Value(w))
		}
	}
	return nil
}
