package corpus

import (
	"bufio"
	"io"
	"math/rand/v2"
	"strings"
)

// The toy grammar of seed 001's word-level experiments: every sentence is
// determiner, optional adjective, subject, verb, determiner, optional
// adjective, object, full stop. A model that learns it must learn word
// classes and their order, which is easy to check by eye in its samples.
var (
	toyDeterminers = []string{"the", "a", "every", "this", "my"}
	toyAdjectives  = []string{"big", "small", "red", "quiet", "happy", "old", "clever"}
	toySubjects    = []string{"cat", "dog", "bird", "child", "teacher", "farmer"}
	toyVerbs       = []string{"chases", "sees", "likes", "finds", "follows", "carries"}
	toyObjects     = []string{"ball", "mouse", "book", "tree", "apple", "hat"}
)

// The defaults of `gptg data toy`, which made the built-in corpus
// "builtin:toy" (corpus/builtin/toy.txt).
const (
	ToyDefaultSentences = 5000
	ToyDefaultSeed      = 1
)

// ToySentences returns n sentences of the toy grammar, one per line, drawn
// from seed: the same seed gives the same text.
func ToySentences(n int, seed uint64) string {
	var b strings.Builder
	WriteToySentences(&b, n, seed) // a strings.Builder never fails
	return b.String()
}

// WriteToySentences writes what ToySentences returns to w as it draws it,
// in memory of a few KiB whatever n: `gptg data toy` writes up to 10M
// sentences (400 MB), which as one string took 1 GB and crashed a process
// limited below that.
func WriteToySentences(w io.Writer, n int, seed uint64) error {
	rng := rand.New(rand.NewPCG(seed, 1))
	pick := func(words []string) string { return words[rng.IntN(len(words))] }
	b := bufio.NewWriterSize(w, 64<<10)
	for i := 0; i < n; i++ {
		phrase := func(nouns []string) {
			b.WriteString(pick(toyDeterminers) + " ")
			if rng.IntN(2) == 0 {
				b.WriteString(pick(toyAdjectives) + " ")
			}
			b.WriteString(pick(nouns))
		}
		phrase(toySubjects)
		b.WriteString(" " + pick(toyVerbs) + " ")
		phrase(toyObjects)
		if _, err := b.WriteString(" .\n"); err != nil {
			return err // a full disk or closed pipe: stop drawing
		}
	}
	return b.Flush()
}

// IsToySentence says whether words (without the full stop) follow the toy
// grammar; tests use it to check that a model's samples are grammatical.
func IsToySentence(words []string) bool {
	in := func(w string, set []string) bool {
		for _, s := range set {
			if s == w {
				return true
			}
		}
		return false
	}
	i := 0
	phrase := func(nouns []string) bool {
		if i >= len(words) || !in(words[i], toyDeterminers) {
			return false
		}
		i++
		if i < len(words) && in(words[i], toyAdjectives) {
			i++
		}
		if i >= len(words) || !in(words[i], nouns) {
			return false
		}
		i++
		return true
	}
	if !phrase(toySubjects) || i >= len(words) || !in(words[i], toyVerbs) {
		return false
	}
	i++
	return phrase(toyObjects) && i == len(words)
}
