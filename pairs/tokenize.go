// Package pairs reads a parallel corpus — one source sentence and its
// translation per line, separated by a tab — into word ids and fixed-shape
// padded batches for the encoder–decoder (the translation chapter, seed 001):
//
//	src     = source words, EOS, PAD…        (B × S)
//	dec_in  = SOS, target words, PAD…        (B × T)  the target shifted right
//	dec_tgt = target words, EOS, PAD…        (B × T)  what the decoder predicts
//
// with PAD = 0, SOS = 1, EOS = 2 and UNK = 3 as the seed numbers them.
package pairs

import (
	"strings"
	"unicode"
)

// The special ids, as seed 001 numbers them, and their words in a
// vocabulary.
const (
	PAD = 0
	SOS = 1
	EOS = 2
	UNK = 3
)

// Specials are the words of ids PAD, SOS, EOS and UNK, in that order, at
// the head of every vocabulary. The angle brackets keep them apart from
// any word Tokenize can produce ("<" is split off as punctuation).
var Specials = []string{"<pad>", "<sos>", "<eos>", "<unk>"}

// Tokenize splits a sentence into words as the seed does: lower-cased, runs
// of letters and digits (with their combining marks) are words, and every
// other character that is not a space is a word of its own, so
// "¿Dónde está?" gives ["¿", "dónde", "está", "?"] and "don't" gives
// ["don", "'", "t"].
func Tokenize(s string) []string {
	var words []string
	start := -1 // byte offset where the current run of letters began
	for i, r := range s {
		switch {
		case isWordRune(r):
			if start < 0 {
				start = i
			}
			continue
		case start >= 0:
			words = append(words, strings.ToLower(s[start:i]))
			start = -1
		}
		if !unicode.IsSpace(r) {
			words = append(words, strings.ToLower(string(r)))
		}
	}
	if start >= 0 {
		words = append(words, strings.ToLower(s[start:]))
	}
	return words
}

func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r)
}

// Detokenize joins words back into readable text: a space between words,
// none before closing punctuation or after opening punctuation, and an
// apostrophe before an English contraction's ending joins its neighbours,
// so ["¿", "dónde", "está", "?"] reads "¿dónde está?" and ["don", "'", "t"]
// "don't" (an apostrophe elsewhere may be a quote: "said 'go'"). A hyphen
// between two words joins them ("well-known") and a comma, period or colon
// between two numbers does too ("1,000", "3:16"), as they were before
// Tokenize split them; an em dash joins its neighbours ("sockets—under"), as
// English typesetting (and the built-in corpus) writes it. BLEU's 13a tokenization keeps such groups whole, so
// a reference must read back exactly to score 100 against itself.
func Detokenize(words []string) string {
	var b strings.Builder
	noSpaceNext := true
	for i, w := range words {
		between := i > 0 && i+1 < len(words)
		inWord := between && apostrophe(w) && isWord(words[i-1]) && contraction[words[i+1]] ||
			between && w == "-" && isWord(words[i-1]) && isWord(words[i+1]) ||
			between && numberSeparator(w) && isNumber(words[i-1]) && isNumber(words[i+1])
		if !noSpaceNext && !closing(w) && !inWord && w != "—" {
			b.WriteByte(' ')
		}
		b.WriteString(w)
		noSpaceNext = opening(w) || inWord || w == "—"
	}
	return b.String()
}

func apostrophe(w string) bool { return w == "'" || w == "’" }

// contraction holds what follows the apostrophe of "don't", "it's",
// "we're", "I've", "we'll", "I'd", "I'm".
var contraction = map[string]bool{"t": true, "s": true, "re": true, "ve": true, "ll": true, "d": true, "m": true}

// isWord reports whether w is a word of letters or digits, not punctuation.
func isWord(w string) bool {
	for _, r := range w {
		return isWordRune(r)
	}
	return false
}

func numberSeparator(w string) bool { return w == "," || w == "." || w == ":" }

// isNumber reports whether w is a run of decimal digits.
func isNumber(w string) bool {
	for _, r := range w {
		if r < '0' || r > '9' {
			return false
		}
	}
	return w != ""
}

func closing(w string) bool {
	switch w {
	case ".", ",", ";", ":", "!", "?", ")", "]", "}", "»", "”", "’", "%":
		return true
	}
	return false
}

func opening(w string) bool {
	switch w {
	case "¿", "¡", "(", "[", "{", "«", "“", "‘":
		return true
	}
	return false
}
