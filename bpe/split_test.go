package bpe

import (
	"slices"
	"strings"
	"testing"
	"unicode"
)

// splitCases are the pre-split's edge cases with the pieces GPT-2's regex
// gives (checked with JavaScript's regex engine, which has the look-ahead,
// by testdata/splitcases.js; every case is also in stress.txt, whose ids
// the golden test compares with tiktoken's).
var splitCases = []struct {
	text string
	want []string
}{
	{"", nil},
	{"Hello world", []string{"Hello", " world"}},
	// Contractions: lower case only, and only at the start of a piece.
	{"it's I'M he'd we'll they're you've", []string{"it", "'s", " I", "'", "M", " he", "'d", " we", "'ll", " they", "'re", " you", "'ve"}},
	{"'s 't 're 've 'm 'll 'd", []string{"'s", " '", "t", " '", "re", " '", "ve", " '", "m", " '", "ll", " '", "d"}},
	{"'S 'T 'RE 'Ve 'LL", []string{"'", "S", " '", "T", " '", "RE", " '", "Ve", " '", "LL"}},
	{"'sup 'reed ''s ?'s '", []string{"'s", "up", " '", "reed", " ''", "s", " ?'", "s", " '"}},
	{"don't", []string{"don", "'t"}},
	// One space joins the word after it; the others stay behind, less the
	// last one, which goes with the word.
	{"a  b", []string{"a", " ", " b"}},
	{"a   b", []string{"a", "  ", " b"}},
	{"   leading", []string{"  ", " leading"}},
	{"trailing   ", []string{"trailing", "   "}},
	{" ", []string{" "}},
	{"  ", []string{"  "}},
	// Only a space (U+0020) joins the next piece; a tab or newline does
	// not, and a run of whitespace keeps its last character back.
	{"a\tb", []string{"a", "\t", "b"}},
	{"a\t\tb", []string{"a", "\t", "\t", "b"}},
	{"a \tb", []string{"a", " ", "\t", "b"}},
	{"a\t b", []string{"a", "\t", " b"}},
	{"a\nb", []string{"a", "\n", "b"}},
	{"a\n\nb", []string{"a", "\n", "\n", "b"}},
	{"a\n\n\nb", []string{"a", "\n\n", "\n", "b"}},
	{"a\n\n b", []string{"a", "\n\n", " b"}},
	{"a\r\nb\r\n", []string{"a", "\r", "\n", "b", "\r\n"}},
	{"line\n", []string{"line", "\n"}},
	{"x \n\t \u00a0y", []string{"x", " \n\t ", "\u00a0", "y"}},
	{"a\u3000\u3000b", []string{"a", "\u3000", "\u3000", "b"}},
	{" \u3000b", []string{" ", "\u3000", "b"}},
	// Digits, letters and the rest are separate runs, each taking one
	// space before it; digits are not grouped.
	{"abc123def", []string{"abc", "123", "def"}},
	{" 12345678901234567890", []string{" 12345678901234567890"}},
	{"3.14 1,000", []string{"3", ".", "14", " 1", ",", "000"}},
	{"x²½Ⅻ", []string{"x", "²½Ⅻ"}},
	{"!!! ?!", []string{"!!!", " ?!"}},
	{"a...b", []string{"a", "...", "b"}},
	{" (x)", []string{" (", "x", ")"}},
	{"<|endoftext|>", []string{"<|", "endoftext", "|>"}},
	{"x\x00y", []string{"x", "\x00", "y"}},
	// Letters of every script, with their combining marks (which are not
	// letters) and joiners.
	{"naïve café", []string{"naïve", " café"}},
	{"cafe\u0301", []string{"cafe", "\u0301"}},
	{"我爱你", []string{"我爱你"}},
	{"Привет мир", []string{"Привет", " мир"}},
	{"שלום עולם", []string{"שלום", " עולם"}},
	{"👨\u200d👩 😀", []string{"👨\u200d👩", " 😀"}},
	// Bytes outside UTF-8 are characters of their own class.
	{"a\xffb \xfe", []string{"a", "\xff", "b", " \xfe"}},
}

func TestSplitCases(t *testing.T) {
	for _, c := range splitCases {
		if got := Split(c.text); !slices.Equal(got, c.want) {
			t.Errorf("Split(%q) = %q, want %q", c.text, got, c.want)
		}
	}
}

// The classes agree with the regex's on every Unicode whitespace
// character; unicode.IsSpace is the White_Space property.
func TestSplitWhitespace(t *testing.T) {
	var spaces []rune
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if unicode.Is(unicode.White_Space, r) {
			spaces = append(spaces, r)
		}
		if unicode.Is(unicode.White_Space, r) != (classOfRune(r) == space) {
			t.Errorf("U+%04X: White_Space %v, class %d", r, unicode.Is(unicode.White_Space, r), classOfRune(r))
		}
	}
	if len(spaces) != 25 {
		t.Errorf("%d White_Space characters, want Unicode 15's 25", len(spaces))
	}
	for _, r := range spaces {
		s := string(r)
		for _, c := range []struct {
			text string
			want []string
		}{
			{"x" + s + "y", []string{"x", s, "y"}},
			{"x" + s + s + "y", []string{"x", s, s, "y"}},
			{"x" + s + s + s + "y", []string{"x", s + s, s, "y"}},
			{"x" + s + s, []string{"x", s + s}},
		} {
			if r == ' ' {
				continue // a space joins the word, above
			}
			if got := Split(c.text); !slices.Equal(got, c.want) {
				t.Errorf("Split(%q) = %q, want %q", c.text, got, c.want)
			}
		}
	}
}

// Pieces cover the text exactly, and NextPiece never returns 0 on text.
func TestSplitCovers(t *testing.T) {
	text := stressText(t)
	if got := strings.Join(Split(text), ""); got != text {
		t.Fatal("the pieces of stress.txt do not join back into it")
	}
}
