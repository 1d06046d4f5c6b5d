package bleu

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// lines reads a testdata file's lines.
func lines(t *testing.T, name string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// TestTokenize13a compares the tokens of every test line with those of
// testdata/mkexpected.py's Python 13a (Python's re and str.split).
func TestTokenize13a(t *testing.T) {
	for _, name := range []string{"tricky", "hyp", "ref"} {
		in, want := lines(t, name+".txt"), lines(t, name+".13a.txt")
		if len(in) != len(want) {
			t.Fatalf("%s: %d lines, %d tokenized", name, len(in), len(want))
		}
		for i := range in {
			if got := strings.Join(Tokenize13a(in[i]), " "); got != want[i] {
				t.Errorf("%s.txt line %d: %q\n got %q\nwant %q", name, i+1, in[i], got, want[i])
			}
		}
	}
	// What single lines cannot show: a hyphen at a line end joins.
	if got := Tokenize13a("a hyphen-\nated word\nand a line"); !slices.Equal(got, []string{"a", "hyphenated", "word", "and", "a", "line"}) {
		t.Errorf("line ends: %q", got)
	}
}

type expected struct {
	MadeBy string `json:"made_by"`
	Cases  []struct {
		Name        string   `json:"name"`
		Hyp         string   `json:"hyp"`
		Refs        []string `json:"refs"`
		Lowercase   bool     `json:"lowercase"`
		Lines       int      `json:"lines"`
		Cut         int      `json:"cut"`
		ReverseRefs bool     `json:"reverse_refs"`
		BLEU        float64  `json:"bleu"`
		Matches     [N]int   `json:"matches"`
		Totals      [N]int   `json:"totals"`
		BP          float64  `json:"bp"`
		HypLen      int      `json:"hyp_len"`
		RefLen      int      `json:"ref_len"`
	} `json:"cases"`
}

// TestMatchesNLTK scores the committed hypotheses as
// testdata/mkexpected.py did with NLTK's corpus_bleu, and requires the
// same BLEU to 1e-6 and the same counts exactly.
func TestMatchesNLTK(t *testing.T) {
	raw, err := os.ReadFile("testdata/expected.json")
	if err != nil {
		t.Fatal(err)
	}
	var want expected
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	if len(want.Cases) < 6 {
		t.Fatalf("%d cases in expected.json", len(want.Cases))
	}
	for _, c := range want.Cases {
		t.Run(c.Name, func(t *testing.T) {
			hyps := lines(t, c.Hyp)
			n := len(hyps)
			if c.Lines > 0 {
				n = c.Lines
			}
			hyps = hyps[:n]
			if c.Cut > 0 {
				for i, h := range hyps {
					w := strings.Fields(h)
					hyps[i] = strings.Join(w[:min(c.Cut, len(w))], " ")
				}
			}
			refs := make([][]string, n)
			for _, name := range c.Refs {
				rs := lines(t, name)[:n]
				if c.ReverseRefs {
					slices.Reverse(rs)
				}
				for i := range refs {
					refs[i] = append(refs[i], rs[i])
				}
			}
			got, err := Corpus(hyps, refs, Options{Lowercase: c.Lowercase})
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(got.BLEU-c.BLEU) > 1e-6 {
				t.Errorf("BLEU %.12g, NLTK %.12g", got.BLEU, c.BLEU)
			}
			if got.Matches != c.Matches || got.Totals != c.Totals || got.HypLen != c.HypLen || got.RefLen != c.RefLen {
				t.Errorf("matches %v totals %v lengths %d/%d; NLTK %v %v %d/%d",
					got.Matches, got.Totals, got.HypLen, got.RefLen, c.Matches, c.Totals, c.HypLen, c.RefLen)
			}
			if math.Abs(got.BP-c.BP) > 1e-12 {
				t.Errorf("BP %.15g, NLTK %.15g", got.BP, c.BP)
			}
			t.Logf("%s; NLTK %.9f, difference %.1e", got, c.BLEU, math.Abs(got.BLEU-c.BLEU))
		})
	}
}

func TestCorpusEdges(t *testing.T) {
	if _, err := Corpus([]string{"a"}, nil, Options{}); err == nil {
		t.Error("more hypotheses than references: no error")
	}
	if _, err := Corpus([]string{"a"}, [][]string{{}}, Options{}); err == nil {
		t.Error("a hypothesis without references: no error")
	}
	perfect, _ := Corpus([]string{"the cat sat on the mat ."}, [][]string{{"the cat sat on the mat."}}, Options{})
	if perfect.BLEU != 1 || perfect.BP != 1 {
		t.Errorf("a perfect match: %v", perfect)
	}
	empty, _ := Corpus([]string{""}, [][]string{{"the cat"}}, Options{})
	if empty.BLEU != 0 || empty.BP != 0 {
		t.Errorf("an empty hypothesis: %v", empty)
	}
	// The closest reference length, the shorter on a tie: 4 words against
	// references of 2 and 6 words counts 2.
	s := CorpusTokens([][]string{{"a", "b", "c", "d"}}, [][][]string{{{"x", "y", "z", "w", "v", "u"}, {"a", "b"}}}, Options{})
	if s.RefLen != 2 {
		t.Errorf("effective reference length %d, want 2", s.RefLen)
	}
	// A hypothesis of two words has one bigram and no trigram or 4-gram:
	// NLTK counts one unmatched n-gram of each missing order, sacrebleu none.
	short := [][]string{{"a", "b"}}
	ref := [][][]string{{{"a", "b"}}}
	if s := CorpusTokens(short, ref, Options{}); s.Totals != [N]int{2, 1, 1, 1} || s.Matches != [N]int{2, 1, 0, 0} || s.BLEU != 0 {
		t.Errorf("NLTK's counts: %+v", s)
	}
	if s := CorpusTokens(short, ref, Options{Sacrebleu: true}); s.Totals != [N]int{2, 1, 0, 0} || s.Matches != [N]int{2, 1, 0, 0} {
		t.Errorf("sacrebleu's counts: %+v", s)
	}
	// sacrebleu's default "exp" smoothing (sacrebleu.BLEU.compute_bleu:
	// the k-th order without a match gets precision 1/(2ᵏ·total)).
	// "the cat sat on the mat" against "the cat is on the mat": 5/6, 3/5,
	// 1/4 and no 4-gram of 3 → 1/(2·3); BLEU = (5/6·3/5·1/4·1/6)^¼ = (1/48)^¼.
	cat := [][]string{strings.Fields("the cat sat on the mat")}
	catRef := [][][]string{{strings.Fields("the cat is on the mat")}}
	if s := CorpusTokens(cat, catRef, Options{Sacrebleu: true}); math.Abs(s.BLEU-math.Pow(1.0/48, 0.25)) > 1e-12 || s.Precisions[3] != 1.0/6 {
		t.Errorf("sacrebleu's exp smoothing: BLEU %v, want (1/48)^¼ = %v (%+v)", s.BLEU, math.Pow(1.0/48, 0.25), s)
	}
	if s := CorpusTokens(cat, catRef, Options{}); s.BLEU != 0 {
		t.Errorf("NLTK without smoothing scores a missing 4-gram match 0, got %v", s.BLEU)
	}
	// Three orders without a match: 2/4, then 1/(2·3), 1/(4·2), 1/(8·1).
	abcd := [][]string{strings.Fields("a b c d")}
	axcy := [][][]string{{strings.Fields("a x c y")}}
	if s := CorpusTokens(abcd, axcy, Options{Sacrebleu: true}); math.Abs(s.BLEU-math.Pow(0.5/6/8/8, 0.25)) > 1e-12 {
		t.Errorf("exp smoothing over three orders: BLEU %v, want %v", s.BLEU, math.Pow(0.5/6/8/8, 0.25))
	}
	// An order with no n-grams at all is not smoothed: BLEU 0.
	if s := CorpusTokens(short, ref, Options{Sacrebleu: true}); s.BLEU != 0 {
		t.Errorf("a corpus without 3-grams: BLEU %v, want 0", s.BLEU)
	}
	if got, want := perfect.String(), "BLEU = 100.00 100.0/100.0/100.0/100.0 (BP = 1.000 ratio = 1.000 hyp_len = 7 ref_len = 7)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
