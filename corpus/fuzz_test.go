package corpus

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzEncode feeds arbitrary text to the tokenizers the way a prompt or a
// corpus reaches them. Properties: no panic; an error is one line; text
// built from the vocabulary round-trips through Encode and Decode; a
// vocabulary built from any valid text encodes that text.
func FuzzEncode(f *testing.F) {
	for _, s := range []string{"ROMEO:", "", "\n", "é\t\x00", "\xff\xfe", "the cat .", "  a  b  ", "日本語", "a\u00a0b"} {
		f.Add(s, "First Citizen:\nBefore we proceed any further, hear me speak.")
	}
	f.Fuzz(func(t *testing.T, prompt, corpusText string) {
		for _, kind := range []string{Char, Word} {
			v, err := BuildVocab(kind, corpusText)
			if err != nil {
				if strings.Contains(err.Error(), "\n") {
					t.Fatalf("multi-line error: %q", err)
				}
				continue
			}
			ids, err := v.Encode(corpusText)
			if err != nil {
				t.Fatalf("%s vocabulary of a text cannot encode that text: %v", kind, err)
			}
			back := v.Decode(ids)
			if kind == Char && back != corpusText {
				t.Fatalf("char round trip: %q → %q", corpusText, back)
			}
			if kind == Word && back != strings.Join(strings.Fields(corpusText), " ") {
				t.Fatalf("word round trip: %q → %q", corpusText, back)
			}
			pids, err := v.Encode(prompt)
			if err != nil {
				if strings.Contains(err.Error(), "\n") {
					t.Fatalf("multi-line error: %q", err)
				}
				continue
			}
			for _, id := range pids {
				if id < 0 || id >= v.Size() {
					t.Fatalf("id %d outside the vocabulary of %d", id, v.Size())
				}
			}
			if kind == Char && utf8.ValidString(prompt) && v.Decode(pids) != prompt {
				t.Fatalf("prompt round trip: %q", prompt)
			}
			// Rebuilding from the token list (what a model file stores) gives the same ids.
			v2, err := NewVocab(kind, v.Tokens())
			if err != nil {
				t.Fatalf("NewVocab of a built vocabulary: %v", err)
			}
			if again, _ := v2.Encode(prompt); len(again) != len(pids) {
				t.Fatalf("rebuilt vocabulary encodes %q differently", prompt)
			}
		}
	})
}
