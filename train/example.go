package train

import (
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gptg/gptg/pairs"
)

// A translation run records one sentence of its own training pairs in a
// comment line of config.toml: gptg serve's playground and attention
// explorer start from it, so that a first click translates a sentence in
// the model's own source language, with words it knows, instead of a
// fixed English one that another model cannot read.

// examplePrefix starts the comment line of config.toml that holds the
// example sentence, Go-quoted.
const examplePrefix = "# example sentence: "

// maxExampleBytes bounds the example: a page's first sentence, not a
// corpus line of any length.
const maxExampleBytes = 300

// exampleSentence is the source side of the first training pair whose
// words the source vocabulary all knows (no UNK), else of the first
// training pair at all, as the pairs file has it; "" when every one is
// longer than maxExampleBytes or not UTF-8.
func exampleSentence(c *pairs.Corpus) string {
	first := ""
	for _, p := range c.Train {
		if len(p.SrcText) > maxExampleBytes || !utf8.ValidString(p.SrcText) || strings.TrimSpace(p.SrcText) == "" {
			continue
		}
		if !slices.Contains(p.Src, pairs.UNK) {
			return p.SrcText
		}
		if first == "" {
			first = p.SrcText
		}
	}
	return first
}

// exampleHeader renders config.toml's example line ("" for none).
func exampleHeader(sentence string) string {
	if sentence == "" {
		return ""
	}
	return examplePrefix + strconv.Quote(sentence) + " (from the training pairs: gptg serve's playground starts from it)\n"
}

// Example reads the example sentence a translation run's config.toml text
// records ("" if none: a GPT run, a run from before the line, or a line
// that is mangled or too long).
func Example(text []byte) string {
	for line := range strings.Lines(string(text)) {
		if rest, ok := strings.CutPrefix(line, examplePrefix); ok {
			q, err := strconv.QuotedPrefix(rest)
			if err != nil {
				return ""
			}
			s, _ := strconv.Unquote(q)
			if len(s) > maxExampleBytes || !utf8.ValidString(s) {
				return ""
			}
			return s
		}
		if !strings.HasPrefix(line, "#") {
			break
		}
	}
	return ""
}
