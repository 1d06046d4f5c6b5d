// Package toypairs writes the toy translation corpora and the tiny
// encoder–decoder config that the tests of translation train on: the
// target of each pair is its source reversed, every word aN becoming bN,
// so that a model of a few thousand weights can learn it in seconds.
package toypairs

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// Counted is n pairs of three words, "aX aY aZ\tbZ bY bX", with X, Y and
// Z counted through 7, 7 and 5 values: the same text every time, with no
// random stream to keep apart.
func Counted(n int) string {
	var tsv strings.Builder
	for i := range n {
		fmt.Fprintf(&tsv, "a%d a%d a%d\tb%d b%d b%d\n", i%7, (i/7)%7, i%5, i%5, (i/7)%7, i%7)
	}
	return tsv.String()
}

// Random is n pairs of minLen to maxLen words, each word one of vocab,
// lengths and words drawn from rng in turn.
func Random(rng *rand.Rand, n, vocab, minLen, maxLen int) string {
	var tsv strings.Builder
	for range n {
		var src, tgt []string
		for range minLen + rng.IntN(maxLen-minLen+1) {
			w := rng.IntN(vocab)
			src = append(src, fmt.Sprintf("a%d", w))
			tgt = append([]string{fmt.Sprintf("b%d", w)}, tgt...)
		}
		fmt.Fprintf(&tsv, "%s\t%s\n", strings.Join(src, " "), strings.Join(tgt, " "))
	}
	return tsv.String()
}

// Config is the TOML of an encoder–decoder of embedding 8, two heads and
// one block a side, on the pairs file data (sentences of at most 4 words),
// trained in batches of 8 for steps steps into out. model and train are
// more lines of its [model] and [train] tables ("" for none), each ending
// in a newline.
func Config(data, out string, steps int, model, train string) string {
	return fmt.Sprintf(`[data]
format = "pairs"
path = %q
max_source = 4
max_target = 4

[model]
arch = "encoder-decoder"
embedding = 8
heads = 2
encoder_blocks = 1
decoder_blocks = 1
ff_hidden = 16
%s
[train]
batch = 8
max_steps = %d
out = %q
%s`, data, model, steps, out, train)
}
