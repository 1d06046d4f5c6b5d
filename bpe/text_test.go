package bpe

import (
	"strings"
	"testing"
)

func TestReadable(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{" the", " the"},
		{"\xe2\x80", "<0xE2><0x80>"},
		{"a\xffé", "a<0xFF>é"},
		{"", ""},
	} {
		if got := Readable([]byte(c.in)); got != c.want {
			t.Errorf("Readable(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// Decoding GPT-2's tokens one at a time through a TextBuffer prints each
// character whole, and the same text as decoding them all at once.
func TestTextBuffer(t *testing.T) {
	tok := gpt2Tokenizer(t)
	text := stressText(t)
	var buf TextBuffer
	var b strings.Builder
	for _, id := range tok.Encode(text) {
		out := buf.Write(tok.Piece(id))
		if strings.ContainsRune(out, '\uFFFD') && !strings.ContainsRune(text, '\uFFFD') {
			t.Fatalf("token %d: %q has a broken character", id, out)
		}
		b.WriteString(out)
	}
	b.WriteString(buf.Flush())
	if b.String() != text {
		t.Fatal("the text a token at a time differs from the text")
	}
	for _, c := range []struct {
		parts []string
		want  []string // Write's results, then Flush's
	}{
		{[]string{"a\xe2", "\x82", "\xac b"}, []string{"a", "", "€ b", ""}},
		{[]string{"\xe2\x82"}, []string{"", "\uFFFD\uFFFD"}},           // cut short at the end
		{[]string{"\x80x"}, []string{"\uFFFDx", ""}},                   // a lone continuation byte
		{[]string{"\xe0\x80", "x"}, []string{"\uFFFD\uFFFD", "x", ""}}, // can never be valid: not held
		{[]string{"\xf0\x9f", "\x98", "\x80!"}, []string{"", "", "😀!", ""}},
	} {
		var buf TextBuffer
		for i, p := range c.parts {
			if got := buf.Write([]byte(p)); got != c.want[i] {
				t.Errorf("%q: Write #%d = %q, want %q", c.parts, i, got, c.want[i])
			}
		}
		if got := buf.Flush(); got != c.want[len(c.parts)] {
			t.Errorf("%q: Flush = %q, want %q", c.parts, got, c.want[len(c.parts)])
		}
	}
}
