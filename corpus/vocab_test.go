package corpus

import (
	"slices"
	"strings"
	"testing"
)

func TestBuildVocabChar(t *testing.T) {
	v, err := BuildVocab(Char, "hello, wörld\n")
	if err != nil {
		t.Fatal(err)
	}
	// Sorted by code point: '\n' < ' ' < ',' < letters < 'ö' (U+00F6).
	want := []string{"\n", " ", ",", "d", "e", "h", "l", "o", "r", "w", "ö"}
	if got := v.Tokens(); !slices.Equal(got, want) {
		t.Fatalf("tokens = %q, want %q", got, want)
	}
	if v.Kind() != Char || v.Size() != len(want) {
		t.Fatalf("kind %q size %d", v.Kind(), v.Size())
	}
	ids, err := v.Encode("öl")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids, []int{10, 6}) {
		t.Fatalf("Encode = %v", ids)
	}
	if got := v.Decode(ids); got != "öl" {
		t.Fatalf("Decode = %q", got)
	}
}

func TestBuildVocabWord(t *testing.T) {
	v, err := BuildVocab(Word, "the cat sat\n on  the\tmat")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"cat", "mat", "on", "sat", "the"}
	if got := v.Tokens(); !slices.Equal(got, want) {
		t.Fatalf("tokens = %q, want %q", got, want)
	}
	ids, err := v.Encode("  the mat\non the cat ")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids, []int{4, 1, 2, 4, 0}) {
		t.Fatalf("Encode = %v", ids)
	}
	if got := v.Decode(ids); got != "the mat on the cat" {
		t.Fatalf("Decode = %q", got)
	}
	_, err = v.Encode("the dog ate the cat dog")
	if err == nil || err.Error() != `2 words outside the vocabulary: "dog", "ate"` {
		t.Fatalf("unknown words: err = %v", err)
	}
}

func TestEncodeUnknownCharacters(t *testing.T) {
	v, err := BuildVocab(Char, "abc")
	if err != nil {
		t.Fatal(err)
	}
	_, err = v.Encode("abé\tcé\t")
	want := `2 characters outside the vocabulary: "é", "\t"`
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %s", err, want)
	}
	_, err = v.Encode("a\xffb")
	if err == nil || !strings.Contains(err.Error(), "offset 1") {
		t.Fatalf("invalid UTF-8: err = %v", err)
	}
}

// TestEncodeManyUnknown: a prompt in another script must not produce a
// message of thousands of characters; it shows a few and the count.
func TestEncodeManyUnknown(t *testing.T) {
	v, err := BuildVocab(Char, "abc")
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	for r := rune(0x4e00); r < 0x4e00+5000; r++ {
		text.WriteRune(r)
	}
	_, err = v.Encode("a" + text.String())
	want := `5000 characters outside the vocabulary: "一", "丁", "丂", "七", "丄", "丅", "丆", "万" and 4992 more`
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %s", err, want)
	}
}

func TestEncodeWordCaseHint(t *testing.T) {
	v, err := BuildVocab(Word, "the cat sat on the mat .")
	if err != nil {
		t.Fatal(err)
	}
	_, err = v.Encode("The cat sat on a MAT")
	want := `3 words outside the vocabulary: "The", "a", "MAT"; the case differs: "The" is "the", "MAT" is "mat" in the vocabulary`
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
}

func TestTokensIsACopy(t *testing.T) {
	v, _ := NewVocab(Char, []string{"a", "b"})
	v.Tokens()[0] = "z"
	if v.Tokens()[0] != "a" {
		t.Fatal("changing Tokens() changed the vocabulary")
	}
}

func TestDecodeOutOfRange(t *testing.T) {
	v, _ := NewVocab(Char, []string{"a", "b"})
	if got := v.Decode([]int{0, 2, -1, 1}); got != "a\uFFFD\uFFFDb" {
		t.Fatalf("Decode = %q", got)
	}
}

func TestNewVocabRejects(t *testing.T) {
	cases := []struct {
		kind   string
		tokens []string
		want   string
	}{
		{"byte", []string{"a"}, `unknown tokenizer "byte"`},
		{Char, nil, "vocabulary is empty"},
		{Char, []string{"a", "b", "a"}, `"a" twice (ids 0 and 2)`},
		{Char, []string{"a", ""}, "token 1 is empty"},
		{Char, []string{"a", "bc"}, `token 1 ("bc") is more than one character`},
		{Char, []string{"\xff"}, "not valid UTF-8"},
		{Word, []string{"to", "be or"}, `token 1 ("be or") contains whitespace`},
		{Word, []string{"x", ""}, "token 1 is empty"},
	}
	for _, c := range cases {
		_, err := NewVocab(c.kind, c.tokens)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewVocab(%q, %q): err = %v, want %q", c.kind, c.tokens, err, c.want)
		}
	}
	// A model file's order is kept even when it is not sorted.
	v, err := NewVocab(Word, []string{"zebra", "apple"})
	if err != nil {
		t.Fatal(err)
	}
	if ids, _ := v.Encode("apple zebra"); !slices.Equal(ids, []int{1, 0}) {
		t.Fatalf("ids = %v", ids)
	}
}

func TestBuildVocabRejects(t *testing.T) {
	if _, err := BuildVocab(Word, " \n\t"); err == nil || !strings.Contains(err.Error(), "no word tokens") {
		t.Errorf("blank text: err = %v", err)
	}
	if _, err := BuildVocab("bytes", "abc"); err == nil || !strings.Contains(err.Error(), "unknown tokenizer") {
		t.Errorf("bad kind: err = %v", err)
	}
	if _, err := BuildVocab(BPE, "abc"); err == nil || !strings.Contains(err.Error(), "use LearnBPE") {
		t.Errorf("bpe: err = %v", err)
	}
}
