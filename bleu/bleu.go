// Package bleu scores translations: corpus BLEU (Papineni et al. 2002)
// with 4-grams, uniform weights and the brevity penalty, on the "13a"
// tokenization of WMT's mteval-v13a.pl as sacrebleu applies it, the
// standard way of reporting BLEU on detokenized text. Its numbers equal
// NLTK's corpus_bleu on the same tokens (bleu_test.go, to 1e-6); with
// Options.Sacrebleu they follow sacrebleu where the two differ.
package bleu

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"unicode"
)

// N is the longest n-gram counted.
const N = 4

// Score is a corpus BLEU and what it is made of.
type Score struct {
	BLEU       float64    // in [0, 1]; 100·BLEU is the number papers print
	Precisions [N]float64 // modified n-gram precisions, Matches/Totals
	Matches    [N]int     // clipped n-gram matches over the corpus
	Totals     [N]int     // hypothesis n-grams over the corpus
	BP         float64    // brevity penalty
	HypLen     int        // hypothesis words
	RefLen     int        // the effective reference length: per sentence the closest reference's
}

// String prints the score as sacrebleu does: "BLEU = 25.41 60.2/33.1/19.9/12.5
// (BP = 0.950 ratio = 0.951 hyp_len = 951 ref_len = 1000)".
func (s Score) String() string {
	ratio := 0.0
	if s.RefLen > 0 {
		ratio = float64(s.HypLen) / float64(s.RefLen)
	}
	return fmt.Sprintf("BLEU = %.2f %.1f/%.1f/%.1f/%.1f (BP = %.3f ratio = %.3f hyp_len = %d ref_len = %d)",
		100*s.BLEU, 100*s.Precisions[0], 100*s.Precisions[1], 100*s.Precisions[2], 100*s.Precisions[3],
		s.BP, ratio, s.HypLen, s.RefLen)
}

// Options change how sentences are tokenized and n-grams counted.
type Options struct {
	// Lowercase folds both sides to lower case first (sacrebleu's -lc):
	// for a model whose vocabulary is lower-case, as gptg's pairs are.
	Lowercase bool
	// Sacrebleu scores as sacrebleu's corpus_bleu does by default. The
	// n-grams a hypothesis shorter than n words lacks count as none (NLTK
	// counts one unmatched n-gram of each missing order: its
	// modified_precision divides by max(1, count)), and a precision with
	// no match is smoothed with sacrebleu's "exp" method (mteval's): the
	// k-th such order counts 1/2ᵏ of a match, so one missing 4-gram match
	// lowers BLEU instead of zeroing it. An order the corpus has no
	// n-grams of at all still gives BLEU 0, as sacrebleu.
	Sacrebleu bool
}

// Corpus scores hypotheses against references: refs[i] holds the
// reference translations of hyps[i] (one or more). Sentences are
// tokenized with Tokenize13a.
func Corpus(hyps []string, refs [][]string, opts Options) (Score, error) {
	if len(hyps) != len(refs) {
		return Score{}, fmt.Errorf("bleu: %d hypotheses but %d sets of references", len(hyps), len(refs))
	}
	tok := func(s string) []string {
		if opts.Lowercase {
			s = strings.ToLower(s)
		}
		return Tokenize13a(s)
	}
	th := make([][]string, len(hyps))
	tr := make([][][]string, len(refs))
	for i := range hyps {
		if len(refs[i]) == 0 {
			return Score{}, fmt.Errorf("bleu: hypothesis %d has no reference", i+1)
		}
		th[i] = tok(hyps[i])
		for _, r := range refs[i] {
			tr[i] = append(tr[i], tok(r))
		}
	}
	return CorpusTokens(th, tr, opts), nil
}

// CorpusTokens is Corpus on sentences already split into words (its
// Lowercase option is not used). Every hypothesis needs a reference.
func CorpusTokens(hyps [][]string, refs [][][]string, opts Options) Score {
	var s Score
	for i, h := range hyps {
		s.HypLen += len(h)
		s.RefLen += closestLength(len(h), refs[i])
		// Each hypothesis n-gram counts at most as often as it occurs in
		// the reference where it occurs most ("modified" precision).
		hn := ngrams(h)
		for n := range N {
			most := map[string]int{}
			for _, r := range refs[i] {
				for g, c := range ngrams(r)[n] {
					most[g] = max(most[g], c)
				}
			}
			total := 0
			for g, c := range hn[n] {
				s.Matches[n] += min(c, most[g])
				total += c
			}
			if !opts.Sacrebleu {
				total = max(1, total)
			}
			s.Totals[n] += total
		}
	}
	logSum := 0.0
	smooth := 1.0 // sacrebleu's smooth_mteval
	for n := range N {
		switch {
		case s.Matches[n] > 0:
			s.Precisions[n] = float64(s.Matches[n]) / float64(s.Totals[n])
		case opts.Sacrebleu && s.Totals[n] > 0:
			smooth *= 2
			s.Precisions[n] = 1 / (smooth * float64(s.Totals[n]))
		}
		logSum += math.Log(s.Precisions[n]) / N // -Inf when a precision is 0: BLEU 0, as NLTK without smoothing
	}
	s.BP = 1
	if s.HypLen < s.RefLen {
		s.BP = 0
		if s.HypLen > 0 {
			s.BP = math.Exp(1 - float64(s.RefLen)/float64(s.HypLen))
		}
	}
	if s.HypLen > 0 && !math.IsInf(logSum, -1) {
		s.BLEU = s.BP * math.Exp(logSum)
	}
	return s
}

// closestLength is the length of the reference closest in length to a
// hypothesis of hypLen words, the shorter one on a tie (NLTK's and
// sacrebleu's "closest" effective reference length).
func closestLength(hypLen int, refs [][]string) int {
	best := -1
	for _, r := range refs {
		d, bd := abs(len(r)-hypLen), abs(best-hypLen)
		if best < 0 || d < bd || (d == bd && len(r) < best) {
			best = len(r)
		}
	}
	return best
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// ngrams counts the n-grams of words for n = 1..N (index n-1), each keyed
// by its words with their lengths, so no two n-grams share a key.
func ngrams(words []string) [N]map[string]int {
	var m [N]map[string]int
	for n := range N {
		m[n] = map[string]int{}
		for i := 0; i+n < len(words); i++ {
			var key strings.Builder
			for _, w := range words[i : i+n+1] {
				fmt.Fprintf(&key, "%d:%s", len(w), w)
			}
			m[n][key.String()]++
		}
	}
	return m
}

// The regular expressions of mteval-v13a.pl's tokenization, in order, as
// sacrebleu's TokenizerRegexp has them.
var rules = []struct {
	re   *regexp.Regexp
	repl string
}{
	// ASCII punctuation and symbols except ' , - . become words of their own
	{regexp.MustCompile("([\\{-\\~\\[-\\` -\\&\\(-\\+\\:-\\@\\/])"), " ${1} "},
	// period and comma, unless preceded by a digit
	{regexp.MustCompile(`([^0-9])([\.,])`), "${1} ${2} "},
	// period and comma, unless followed by a digit
	{regexp.MustCompile(`([\.,])([^0-9])`), " ${1} ${2}"},
	// a dash after a digit
	{regexp.MustCompile(`([0-9])(-)`), "${1} ${2} "},
}

// Tokenize13a splits a detokenized sentence into words as mteval-v13a.pl
// and sacrebleu's "13a" tokenizer do: "<skipped>" removed, hyphenated line
// ends joined, four XML entities decoded, ASCII punctuation split off
// (periods and commas only away from digits, so "1,000.5" stays whole),
// then split on white space.
func Tokenize13a(line string) []string {
	line = strings.ReplaceAll(line, "<skipped>", "")
	line = strings.ReplaceAll(line, "-\n", "")
	line = strings.ReplaceAll(line, "\n", " ")
	if strings.Contains(line, "&") {
		line = strings.ReplaceAll(line, "&quot;", `"`)
		line = strings.ReplaceAll(line, "&amp;", "&")
		line = strings.ReplaceAll(line, "&lt;", "<")
		line = strings.ReplaceAll(line, "&gt;", ">")
	}
	line = " " + line + " "
	for _, r := range rules {
		line = r.re.ReplaceAllString(line, r.repl)
	}
	return strings.FieldsFunc(line, isPythonSpace)
}

// isPythonSpace is Python's str.isspace, which sacrebleu's final split
// uses: Go's unicode.IsSpace plus the four ASCII separators 0x1c–0x1f.
func isPythonSpace(r rune) bool {
	return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
}
