package bpe

import (
	"bytes"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// referenceSplit is GPT-2's pattern run the way a backtracking regex
// engine runs it, built on Go's regexp: at each position the alternatives
// are tried in order, and \s+(?!\S) gives back one character at a time
// until the look-ahead holds. It uses Go's Unicode tables, so the fuzz
// test compares it with Split only on text whose classes agree with
// tiktoken's (sameClassesAsGo).
func referenceSplit(text string) []string {
	isSpace := func(s string) bool { return refSpaces.MatchString(s) }
	var out []string
	for len(text) > 0 {
		n := 0
		for _, re := range refAlts {
			if m := re.FindString(text); m != "" {
				n = len(m)
				break
			}
		}
		if n == 0 {
			run := refSpaces.FindString(text)
			// \s+(?!\S): the longest prefix of the run followed by the end
			// or by whitespace; else \s+, the whole run.
			for k := len(run); k > 0; {
				if k == len(text) || isSpace(text[k:]) {
					n = k
					break
				}
				_, size := utf8.DecodeLastRuneInString(run[:k])
				k -= size
			}
			if n == 0 {
				n = len(run)
			}
		}
		out = append(out, text[:n])
		text = text[n:]
	}
	return out
}

const refWS = `\t-\r \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}`

var (
	refAlts = []*regexp.Regexp{
		regexp.MustCompile(`^(?:'s|'t|'re|'ve|'m|'ll|'d)`),
		regexp.MustCompile(`^ ?\pL+`),
		regexp.MustCompile(`^ ?\pN+`),
		regexp.MustCompile(`^ ?[^` + refWS + `\pL\pN]+`),
	}
	refSpaces = regexp.MustCompile(`^[` + refWS + `]+`)
)

// sameClassesAsGo reports whether every character of s is in the same
// class in Go's Unicode tables as in tiktoken's.
func sameClassesAsGo(s string) bool {
	for _, r := range s {
		goClass := other
		switch {
		case unicode.IsLetter(r):
			goClass = letter
		case unicode.IsNumber(r):
			goClass = number
		case unicode.IsSpace(r):
			goClass = space
		}
		if goClass != classOfRune(r) {
			return false
		}
	}
	return true
}

func TestReferenceSplitAgrees(t *testing.T) {
	for _, c := range splitCases {
		if got := referenceSplit(c.text); !slices.Equal(got, c.want) {
			t.Errorf("referenceSplit(%q) = %q, want %q", c.text, got, c.want)
		}
	}
	lines := strings.SplitAfter(stressText(t), "\n")
	compared := 0
	for i, line := range lines {
		if !sameClassesAsGo(line) {
			continue // a character new in Unicode 16
		}
		compared++
		if got, want := Split(line), referenceSplit(line); !slices.Equal(got, want) {
			t.Errorf("stress.txt line %d: Split %q, referenceSplit %q", i+1, got, want)
		}
	}
	if compared < len(lines)*9/10 {
		t.Errorf("only %d of %d lines of stress.txt compared", compared, len(lines))
	}
}

// FuzzEncode checks on any bytes that Split agrees with the regex-engine
// reference and covers the text, that cutting where isCut says keeps the
// pieces, that Encode is the pieces' encodings
// joined, and that decoding gives the bytes back.
func FuzzEncode(f *testing.F) {
	for _, c := range splitCases {
		f.Add(c.text)
	}
	f.Add("  \t\n x'S'Ll 1²3 😀\u200d👩 \xff\xfe a")
	tok := gpt2Tokenizer(f)
	f.Fuzz(func(t *testing.T, text string) {
		pieces := Split(text)
		if sameClassesAsGo(text) {
			if want := referenceSplit(text); !slices.Equal(pieces, want) {
				t.Fatalf("Split(%q) = %q, the reference gives %q", text, pieces, want)
			}
		}
		var joined []int
		for _, p := range pieces {
			if p == "" {
				t.Fatalf("Split(%q) has an empty piece", text)
			}
			joined = tok.AppendEncode(joined, p)
		}
		for i := 1; i < len(text); i++ {
			if isCut(text, i) && !slices.Equal(append(Split(text[:i]), Split(text[i:])...), pieces) {
				t.Fatalf("cutting %q at %d changes its pieces", text, i)
			}
		}
		ids := tok.Encode(text)
		if !slices.Equal(ids, joined) {
			t.Fatalf("Encode(%q) = %v, its pieces' encodings joined are %v", text, ids, joined)
		}
		if back := tok.Decode(ids); !bytes.Equal(back, []byte(text)) {
			t.Fatalf("Decode(Encode(%q)) = %q", text, back)
		}
	})
}
