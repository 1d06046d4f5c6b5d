package bpe

import (
	"sort"
	"unicode/utf8"
)

// GPT-2 splits text into pieces before merging bytes, so that no token
// spans a word and the following space or punctuation. Its pattern is
//
//	's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//
// Go's regexp has no look-ahead, so NextPiece follows the pattern by hand:
// at each position the alternatives are tried in order and the first that
// matches wins, each taking as much as it can, exactly as the regex engines
// of GPT-2's encoder.py and tiktoken do. \s is Unicode's White_Space
// property, \p{L} a letter, \p{N} a number (unicode.IsSpace, IsLetter,
// IsNumber). The contractions are case-sensitive: "'S" is not one.
//
// Which characters are letters and numbers depends on the Unicode version
// of the regex engine's tables: tiktoken's are Unicode 16.0, Go 1.26's
// 15.0. So the classes come from classes_table.go, made by running
// tiktoken (testdata/mkclasses.sh), and not from package unicode.

// class is what the pattern asks of a character.
type class uint8

const (
	other  class = iota // [^\s\p{L}\p{N}]
	letter              // \p{L}
	number              // \p{N}
	space               // \s
)

// whiteSpace is Unicode's White_Space property, unchanged since Unicode
// 6.3: what \s matches in tiktoken's regex engine.
var whiteSpace = []runeRange{
	{0x0009, 0x000D}, {0x0020, 0x0020}, {0x0085, 0x0085}, {0x00A0, 0x00A0},
	{0x1680, 0x1680}, {0x2000, 0x200A}, {0x2028, 0x2029}, {0x202F, 0x202F},
	{0x205F, 0x205F}, {0x3000, 0x3000},
}

type runeRange struct{ lo, hi rune }

type classRange struct {
	runeRange
	class class
}

// bmpClass is the class of every code point below U+10000, where nearly
// all text is; astral holds the letters and numbers above it, sorted.
var bmpClass, astral = func() (*[1 << 16]class, []classRange) {
	bmp := new([1 << 16]class)
	var astral []classRange
	for _, t := range []struct {
		ranges []runeRange
		class  class
	}{{letterRanges, letter}, {numberRanges, number}, {whiteSpace, space}} {
		for _, r := range t.ranges {
			for c := r.lo; c <= r.hi && c < 1<<16; c++ {
				bmp[c] = t.class
			}
			if r.hi >= 1<<16 {
				astral = append(astral, classRange{runeRange{max(r.lo, 1<<16), r.hi}, t.class})
			}
		}
	}
	sort.Slice(astral, func(i, j int) bool { return astral[i].lo < astral[j].lo })
	return bmp, astral
}()

func classOfRune(r rune) class {
	if r < 1<<16 {
		return bmpClass[r]
	}
	lo, hi := 0, len(astral) // the first range ending at or after r
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if astral[m].hi < r {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(astral) && astral[lo].lo <= r {
		return astral[lo].class
	}
	return other
}

// classAt is the class of the character at the start of s and its length
// in bytes. A byte that does not start valid UTF-8 counts as one character
// of class other, so that any bytes split and encode (and decode back).
func classAt(s string) (class, int) {
	if b := s[0]; b < utf8.RuneSelf {
		return bmpClass[b], 1
	}
	r, n := utf8.DecodeRuneInString(s)
	if r == utf8.RuneError && n == 1 {
		return other, 1
	}
	return classOfRune(r), n
}

// runOf is the length in bytes of the run of characters of class c at the
// start of s.
func runOf(s string, c class) int {
	i := 0
	for i < len(s) {
		if b := s[i]; b < utf8.RuneSelf {
			if bmpClass[b] != c {
				return i
			}
			i++
			continue
		}
		cc, n := classAt(s[i:])
		if cc != c {
			return i
		}
		i += n
	}
	return i
}

// NextPiece returns the length in bytes of the first piece of s under
// GPT-2's pre-split pattern, 0 only for an empty s. Splitting s is
// calling it again on what follows; it allocates nothing.
func NextPiece(s string) int {
	if len(s) == 0 {
		return 0
	}
	// 's|'t|'re|'ve|'m|'ll|'d
	if s[0] == '\'' && len(s) >= 2 {
		switch s[1] {
		case 's', 't', 'm', 'd':
			return 2
		case 'r', 'v', 'l':
			if len(s) >= 3 && (s[1:3] == "re" || s[1:3] == "ve" || s[1:3] == "ll") {
				return 3
			}
		}
	}
	c, n := classAt(s)
	// ' ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+' with its optional space
	if s[0] == ' ' && len(s) > 1 {
		if c2, _ := classAt(s[1:]); c2 != space {
			return 1 + runOf(s[1:], c2)
		}
	}
	if c != space {
		return runOf(s, c)
	}
	// \s+(?!\S): the run of whitespace, less its last character when
	// something other than whitespace follows it; \s+ when that leaves
	// nothing, a single whitespace character before the text.
	last, end := 0, n
	for end < len(s) {
		cc, m := classAt(s[end:])
		if cc != space {
			break
		}
		last = end
		end += m
	}
	if end == len(s) || last == 0 {
		return end
	}
	return last
}

// Split returns the pieces of text under GPT-2's pre-split pattern, in
// order; they are substrings of text and join back into it.
func Split(text string) []string {
	var pieces []string
	for len(text) > 0 {
		n := NextPiece(text)
		pieces = append(pieces, text[:n])
		text = text[n:]
	}
	return pieces
}
