package train

import (
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gptg/gptg/corpus"
	"github.com/gptg/gptg/pairs"
)

// A run records an example of its own training data in a comment line of
// config.toml: a translation run one sentence of its pairs, a language
// model the start of its text. gptg serve's playground (translation) and
// attention explorer start from it, so that a first click shows text in
// the model's own language, with words it knows, instead of a fixed
// English one that another model cannot read.

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

// exampleText is a language-model run's example: the start of its
// training text up to the first line's end (character tokens) or the
// first "." (word tokens), at most the model's context and
// maxExampleBytes; the whole context when that start is shorter than
// three tokens. gptg serve's attention explorer starts from it, so that
// the first view shows text the model knows, not a fixed English phrase
// that a model of another alphabet or vocabulary cannot read.
func exampleText(d *corpus.Dataset) (string, error) {
	tokens := d.Vocab.Tokens()
	var kept []int // the example's tokens
	example := ""  // their text, as the vocabulary joins them
	head, err := d.Head(min(d.Cut, d.Context))
	if err != nil {
		return "", err
	}
	for _, id := range head {
		if strings.Contains(tokens[id], "\n") { // a BPE's "\n\n" too
			if len(kept) >= 3 {
				break
			}
			continue // a line too short to stand alone runs into the next
		}
		text := d.Vocab.Decode(append(kept, id))
		if len(text) > maxExampleBytes {
			break
		}
		kept, example = append(kept, id), text
		if d.Vocab.Kind() == corpus.Word && tokens[id] == "." && len(kept) >= 3 {
			break
		}
	}
	// A BPE's tokens may stop inside a character: its first bytes go.
	return strings.TrimSpace(strings.ToValidUTF8(example, "")), nil
}

// exampleHeader renders config.toml's example line ("" for none); from
// says where it came from.
func exampleHeader(sentence, from string) string {
	if sentence == "" {
		return ""
	}
	return examplePrefix + strconv.Quote(sentence) + " (from " + from + ": gptg serve starts from it)\n"
}

// Example reads the example a run's config.toml text records ("" if none:
// a run from before the line, or a line that is mangled or too long).
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
