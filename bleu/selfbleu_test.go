package bleu_test

import (
	"strings"
	"testing"

	"github.com/gptg/gptg/bleu"
	"github.com/gptg/gptg/corpus/builtin"
	"github.com/gptg/gptg/pairs"
)

// TestReferenceScoresItself: the built-in parallel corpus, tokenized as the
// translation model sees it and joined back with pairs.Detokenize (what gptg
// eval scores for a model that translates perfectly), reads back as the
// reference did under BLEU's 13a tokenization, on both sides. The one
// exception is spacing Tokenize cannot see: the English side writes an em
// dash mostly as "soul—and" but ten times as "soul— and", and once nested
// quotes as "’ ”"; Detokenize writes "soul—and" and "’”". The Spanish side, the target of configs/translate,
// scores 100 with sacrebleu's counting; NLTK's counting stays just under,
// as it counts a missing n-gram for every sentence shorter than four words.
func TestReferenceScoresItself(t *testing.T) {
	data, err := builtin.Bytes("bible-en-es")
	if err != nil {
		t.Fatal(err)
	}
	var sides [2][]string
	for _, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		cols := strings.Split(line, "\t")
		sides[0] = append(sides[0], cols[0])
		sides[1] = append(sides[1], cols[1])
	}
	for i, side := range sides {
		hyps := make([]string, len(side))
		refs := make([][]string, len(side))
		for j, s := range side {
			hyps[j] = pairs.Detokenize(pairs.Tokenize(s))
			refs[j] = []string{s}
			spacedDash := strings.Contains(s, "— ") || strings.Contains(s, " —") || strings.Contains(s, "’ ”")
			same := strings.Join(bleu.Tokenize13a(hyps[j]), " ") == strings.Join(bleu.Tokenize13a(strings.ToLower(s)), " ")
			if !same && !spacedDash {
				t.Errorf("side %d line %d reads back as %q under 13a, not as %q", i, j+1, hyps[j], s)
			}
		}
		if i == 0 {
			continue
		}
		sacre, err := bleu.Corpus(hyps, refs, bleu.Options{Lowercase: true, Sacrebleu: true})
		if err != nil {
			t.Fatal(err)
		}
		nltk, _ := bleu.Corpus(hyps, refs, bleu.Options{Lowercase: true})
		if sacre.BLEU != 1 || nltk.BLEU < 0.9999 {
			t.Errorf("the Spanish side scores %.4f (sacrebleu) and %.4f (NLTK) against itself, want 100 and ≥ 99.99", 100*sacre.BLEU, 100*nltk.BLEU)
		}
	}
}
