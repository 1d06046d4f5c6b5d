package corpus

import (
	"strings"
	"testing"

	"github.com/gptg/gptg/corpus/builtin"
)

// The built-in toy corpus is what `gptg data toy` writes by default, so
// that the generator and the committed file cannot drift apart.
func TestBuiltinToyIsTheDefaultToyCorpus(t *testing.T) {
	text, err := builtin.Bytes("toy")
	if err != nil {
		t.Fatal(err)
	}
	if string(text) != ToySentences(ToyDefaultSentences, ToyDefaultSeed) {
		t.Error("corpus/builtin/toy.txt is not ToySentences(ToyDefaultSentences, ToyDefaultSeed): remake it with gptg data toy --out corpus/builtin/toy.txt --force")
	}
}

func TestToySentences(t *testing.T) {
	text := ToySentences(300, 9)
	if text != ToySentences(300, 9) || text == ToySentences(300, 10) {
		t.Fatal("the same seed must give the same text, another seed another")
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if len(lines) != 300 {
		t.Fatalf("%d lines", len(lines))
	}
	for _, l := range lines {
		w := strings.Fields(l)
		if w[len(w)-1] != "." || !IsToySentence(w[:len(w)-1]) {
			t.Fatalf("not a toy sentence: %q", l)
		}
	}
	for _, bad := range []string{"the cat", "cat chases the ball", "the cat chases the", "the big big cat sees a hat",
		"the cat sees a hat hat", "a ball chases the cat", ""} {
		if IsToySentence(strings.Fields(bad)) {
			t.Errorf("%q accepted", bad)
		}
	}
	v, err := BuildVocab(Word, text)
	if err != nil {
		t.Fatal(err)
	}
	// 5 determiners, 7 adjectives, 6 subjects, 6 verbs, 6 objects and "."
	if v.Size() != 31 {
		t.Errorf("vocabulary of %d words, want 31", v.Size())
	}
}
