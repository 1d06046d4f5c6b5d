package pairs

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gptg/gptg/config"
)

func TestTokenize(t *testing.T) {
	for in, want := range map[string]string{
		"In the beginning, God created the heavens and the earth.": "in|the|beginning|,|god|created|the|heavens|and|the|earth|.",
		"¿Dónde está la casa?":                                     "¿|dónde|está|la|casa|?",
		"  ¡Muchas   gracias!  ":                                   "¡|muchas|gracias|!",
		"I don't know.":                                            "i|don|'|t|know|.",
		"Jesus wept.":                                              "jesus|wept|.",
		"YAHWEH’s word—“Listen!”":                                  "yahweh|’|s|word|—|“|listen|!|”",
		"Él come 3 manzanas":                                       "él|come|3|manzanas",
		"ÑANDÚ":                                                    "ñandú",
		"e\u0301l":                                                 "e\u0301l", // a combining accent stays in its word
		"":                                                         "",
		"tab\tand\nnewline":                                        "tab|and|newline",
		"<pad> is not a special":                                   "<|pad|>|is|not|a|special",
		"wait...":                                                  "wait|.|.|.",
		"x(y)":                                                     "x|(|y|)",
	} {
		got := strings.Join(Tokenize(in), "|")
		if got != want {
			t.Errorf("Tokenize(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDetokenize(t *testing.T) {
	for in, want := range map[string]string{
		"¿Dónde está la casa?":          "¿dónde está la casa?",
		"Hello, world (again)!":         "hello, world (again)!",
		"¡Muchas gracias!":              "¡muchas gracias!",
		"I don't know, O'Brien":         "i don't know, o ' brien",
		"Yahweh’s word":                 "yahweh’s word",
		"they said 'go'":                "they said ' go '",
		"a well-known 1,000 (3:16) 2.5": "a well-known 1,000 (3:16) 2.5",
		"wait - no, 3, 4":               "wait-no, 3,4", // Tokenize drops the spaces
		"his soul — and men":            "his soul—and men",
	} {
		if got := Detokenize(Tokenize(in)); got != want {
			t.Errorf("Detokenize(Tokenize(%q)) = %q, want %q", in, got, want)
		}
	}
}

func TestVocab(t *testing.T) {
	v := BuildVocab([][]string{{"b", "a", "c"}, {"a", "b", "a"}, {"d"}}, 2)
	if got, want := v.Words(), []string{"<pad>", "<sos>", "<eos>", "<unk>", "a", "b"}; !slices.Equal(got, want) {
		t.Errorf("words = %q, want %q (specials, then by count, ties in byte order; c and d seen once)", got, want)
	}
	if got := v.Encode([]string{"a", "c", "b"}); !slices.Equal(got, []int{4, UNK, 5}) {
		t.Errorf("Encode = %v", got)
	}
	if got := v.Decode([]int{SOS, 4, UNK, 5, EOS, 4, PAD}); !slices.Equal(got, []string{"a", "<unk>", "b"}) {
		t.Errorf("Decode = %q", got)
	}
	back, err := NewVocab(v.Words())
	if err != nil || !reflect.DeepEqual(back, v) {
		t.Errorf("NewVocab(Words()) = %v, %v", back, err)
	}
	if _, err := NewVocab([]string{"a", "b"}); err == nil {
		t.Error("NewVocab without the specials succeeded")
	}
	if _, err := NewVocab(append(slices.Clone(Specials), "a", "a")); err == nil {
		t.Error("NewVocab with a word twice succeeded")
	}
}

var tiny = Options{Split: 0.7, MinCount: 1, MinSource: 1, MaxSource: 9, MaxTarget: 12}

func TestLoad(t *testing.T) {
	c, err := Load("testdata/tatoeba-style.tsv", tiny)
	if err != nil {
		t.Fatal(err)
	}
	// 25 lines, one of 10 words (too long), 24 kept.
	if c.Lines != 25 || c.TooLong != 1 || c.TooShort != 0 || len(c.Train)+len(c.Test) != 24 {
		t.Fatalf("lines %d, too long %d, too short %d, train %d, test %d", c.Lines, c.TooLong, c.TooShort, len(c.Train), len(c.Test))
	}
	if len(c.Test) == 0 || len(c.Train) < len(c.Test) {
		t.Errorf("split 0.7 gave %d train, %d test", len(c.Train), len(c.Test))
	}
	// Sentences keep their text, the third column is ignored, ids decode back.
	for _, p := range append(slices.Clone(c.Train), c.Test...) {
		if strings.Contains(p.TgtText, "\t") || strings.Contains(p.TgtText, "made up") {
			t.Errorf("line %d: target %q holds the third column", p.Line, p.TgtText)
		}
		if len(p.Src) != len(Tokenize(p.SrcText)) || len(p.Tgt) != len(Tokenize(p.TgtText)) {
			t.Errorf("line %d: ids %v %v for %q %q", p.Line, p.Src, p.Tgt, p.SrcText, p.TgtText)
		}
	}
	// "The dog is big." is on two lines (two translations): one side only.
	var sides []bool
	for _, ps := range [][]Pair{c.Train, c.Test} {
		for _, p := range ps {
			if p.SrcText == "The dog is big." {
				sides = append(sides, len(ps) == len(c.Test))
			}
		}
	}
	if len(sides) != 2 || sides[0] != sides[1] {
		t.Errorf("a repeated source sentence is split across train and test: %v", sides)
	}
	// The vocabulary comes from the training pairs: a word only in the
	// test pairs is UNK.
	seen := map[string]bool{}
	for _, p := range c.Train {
		for _, w := range Tokenize(p.SrcText) {
			seen[w] = true
		}
	}
	for _, p := range c.Test {
		for i, w := range Tokenize(p.SrcText) {
			if want := c.Src.ID(w); seen[w] != (want != UNK) || p.Src[i] != want {
				t.Errorf("test word %q: id %d, in training pairs %v", w, p.Src[i], seen[w])
			}
		}
	}
	if c.Src.Size() != len(seen)+4 {
		t.Errorf("source vocabulary %d words, training pairs have %d (+4 specials)", c.Src.Size(), len(seen))
	}
}

// TestSplitIgnoresOrder: the split depends on each sentence alone, so
// reordering the file, adding lines, a BOM, CRLF ends and blank lines move
// no pair across it, and no line is on both sides.
func TestSplitIgnoresOrder(t *testing.T) {
	raw, err := os.ReadFile("testdata/tatoeba-style.tsv")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	sides := func(c *Corpus) map[string]string {
		m := map[string]string{}
		for side, ps := range map[string][]Pair{"train": c.Train, "test": c.Test} {
			for _, p := range ps {
				key := p.SrcText + "\t" + p.TgtText
				if m[key] != "" && m[key] != side {
					t.Errorf("%q is in both train and test", key)
				}
				m[key] = side
			}
		}
		return m
	}
	a, err := Load("testdata/tatoeba-style.tsv", tiny)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	rng.Shuffle(len(lines), func(i, j int) { lines[i], lines[j] = lines[j], lines[i] })
	text := "\uFEFF" + strings.Join(lines[:10], "\r\n") + "\r\n\r\n  \n" + strings.Join(lines[10:], "\n") + "\nAn extra line.\tUna línea más."
	p := filepath.Join(t.TempDir(), "shuffled.tsv")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := Load(p, tiny)
	if err != nil {
		t.Fatal(err)
	}
	sa, sb := sides(a), sides(b)
	delete(sb, "An extra line.\tUna línea más.")
	if !reflect.DeepEqual(sa, sb) {
		t.Errorf("reordering the file moved pairs across the split:\n%v\n%v", sa, sb)
	}
}

// writeTSV writes text to a file in a temporary folder and returns its path.
func writeTSV(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "p.tsv")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadErrors(t *testing.T) {
	good := strings.Repeat("a b\tc d\n", 50)
	for _, c := range []struct {
		name, text string
		opts       Options
		want       string // with $P for the path
	}{
		{"no tab", good + "a sentence with no tab\n", tiny, "$P:51: no tab: each line is SOURCE<tab>TARGET (more tab-separated columns are ignored)"},
		{"empty source", "\tc d\n" + good, tiny, "$P:1: the source sentence (before the first tab) is empty"},
		{"empty target", good + "a b\t  \tthird\n", tiny, "$P:51: the target sentence (after the first tab) is empty"},
		{"invalid UTF-8", good + "caf\xe9\tcafé\n", tiny, "$P:51: not valid UTF-8 (byte 0xe9 at column 4); a pairs file must be UTF-8 text"},
		{"binary", "\x7fELF\x02\x01\x01\x00\x00\x00\t\x00", tiny, "$P:1: a NUL byte at column 8: this looks like a binary file, not tab-separated text"},
		{"line too long", good + strings.Repeat("x", MaxLineBytes) + "\ty\n", tiny, fmt.Sprintf("$P:51: line is longer than %d bytes (a pairs file has one sentence pair per line)", MaxLineBytes)},
		{"empty file", "", tiny, "$P: has no sentence pairs (expected lines of SOURCE<tab>TARGET)"},
		{"blank lines only", "\n \r\n\n", tiny, "$P: has no sentence pairs (expected lines of SOURCE<tab>TARGET)"},
		{"all filtered", good, Options{Split: 0.5, MinCount: 1, MinSource: 3, MaxSource: 5, MaxTarget: 5},
			"$P: no pair passes the length filter (3..5 source words, at most 5 target words): 50 too short, 0 too long"},
		{"too few to split", "a b\tc d\n", tiny, "$P: 1 pairs kept, too few to split into training and test pairs at split 0.7"},
		{"bad options", good, Options{Split: 1}, "$P: split 1 is out of range (allowed: between 0 and 1, exclusive)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := writeTSV(t, c.text)
			_, err := Load(p, c.opts)
			want := strings.ReplaceAll(c.want, "$P", p)
			if err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Fatalf("got %v\nwant %s", err, want)
			}
			var pe *Error
			if !errors.As(err, &pe) || strings.ContainsAny(err.Error(), "\r\n") {
				t.Errorf("error %T %q is not a one-line *Error", err, err)
			}
		})
	}
	for name, path := range map[string]string{"missing": "nope.tsv", "directory": "testdata", "device": "/dev/zero"} {
		_, err := Load(path, tiny)
		if err == nil || !strings.HasPrefix(err.Error(), path+": ") || strings.Contains(err.Error(), path+": "+path) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestLoadFor(t *testing.T) {
	cfg, err := config.Load("../configs/translate/en-es-seed.toml", []string{"data.path=testdata/tatoeba-style.tsv", "data.min_source=1", "data.split=0.5"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := LoadFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if c.Opts.MinCount != 2 || c.Opts.MaxSource != 16 || c.Opts.MaxTarget != 24 || len(c.Train)+len(c.Test) != 25 {
		t.Errorf("opts %+v, %d+%d pairs", c.Opts, len(c.Train), len(c.Test))
	}
}

// TestBatchLayout checks one batch against the seed's layout, row by row.
func TestBatchLayout(t *testing.T) {
	ps := []Pair{
		{Src: []int{10, 11, 12}, Tgt: []int{20, 21}},
		{Src: []int{13}, Tgt: []int{22, 23, 24, 25}},
		{Src: []int{14, 15}, Tgt: []int{3}},
	}
	b := NewBatcher(ps, 4, 4, 5, 1)
	if got := b.Shapes(); !slices.Equal(got, []Shape{{5, 6}}) {
		t.Fatalf("shapes %v", got)
	}
	plans := b.InOrder()
	if len(plans) != 1 || !slices.Equal(plans[0].Pairs, []int{0, 1, 2}) {
		t.Fatalf("plans %v", plans)
	}
	x := b.NewBatch(0)
	b.Fill(plans[0], x)
	wantSrc := []int{
		10, 11, 12, EOS, PAD,
		13, EOS, PAD, PAD, PAD,
		14, 15, EOS, PAD, PAD,
		EOS, PAD, PAD, PAD, PAD, // filler
	}
	wantIn := []int{
		SOS, 20, 21, PAD, PAD, PAD,
		SOS, 22, 23, 24, 25, PAD,
		SOS, 3, PAD, PAD, PAD, PAD,
		SOS, PAD, PAD, PAD, PAD, PAD,
	}
	wantTgt := []int{
		20, 21, EOS, PAD, PAD, PAD,
		22, 23, 24, 25, EOS, PAD,
		3, EOS, PAD, PAD, PAD, PAD,
		PAD, PAD, PAD, PAD, PAD, PAD,
	}
	if !slices.Equal(x.Src, wantSrc) || !slices.Equal(x.DecIn, wantIn) || !slices.Equal(x.DecTgt, wantTgt) {
		t.Errorf("src %v\ndec_in %v\ndec_tgt %v", x.Src, x.DecIn, x.DecTgt)
	}
	for i := range x.Src {
		if x.SrcPad[i] != (wantSrc[i] == PAD) {
			t.Errorf("SrcPad[%d] = %v", i, x.SrcPad[i])
		}
	}
	for i := range x.DecIn {
		if x.TgtPad[i] != (wantIn[i] == PAD) {
			t.Errorf("TgtPad[%d] = %v", i, x.TgtPad[i])
		}
	}
	if x.Rows != 3 || x.Tokens != 3+5+2 || !slices.Equal(x.Pairs, []int{0, 1, 2}) {
		t.Errorf("rows %d, tokens %d, pairs %v", x.Rows, x.Tokens, x.Pairs)
	}
	// Refilling with fewer pairs leaves nothing of the previous batch.
	b.Fill(Plan{Bucket: 0, Pairs: []int{1}}, x)
	if x.Src[0] != 13 || x.Src[5] != EOS || x.DecIn[6] != SOS || x.DecIn[7] != PAD || x.Tokens != 5 || x.Rows != 1 {
		t.Errorf("refill: src %v dec_in %v tokens %d", x.Src, x.DecIn, x.Tokens)
	}
}

// TestEpochs: every pair once per epoch, the same plan for the same seed
// and epoch, another for another epoch, every pair in a shape it fits.
func TestEpochs(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	ps := make([]Pair, 1000)
	for i := range ps {
		ps[i] = Pair{Src: make([]int, 1+rng.IntN(16)), Tgt: make([]int, 1+rng.IntN(24))}
	}
	for _, buckets := range []int{1, 2, 4} {
		b := NewBatcher(ps, 32, 16, 24, buckets)
		if len(b.Shapes()) != buckets || b.Shapes()[len(b.Shapes())-1] != (Shape{17, 25}) {
			t.Errorf("%d buckets: shapes %v", buckets, b.Shapes())
		}
		e0, again, e1 := b.Epoch(42, 0), b.Epoch(42, 0), b.Epoch(42, 1)
		if !reflect.DeepEqual(e0, again) {
			t.Errorf("%d buckets: the same seed and epoch gave two plans", buckets)
		}
		if reflect.DeepEqual(e0, e1) {
			t.Errorf("%d buckets: epochs 0 and 1 have the same plan", buckets)
		}
		for _, plans := range [][]Plan{e0, e1, b.InOrder()} {
			seen := make([]int, len(ps))
			for _, p := range plans {
				if len(p.Pairs) == 0 || len(p.Pairs) > 32 {
					t.Errorf("a batch of %d pairs", len(p.Pairs))
				}
				s := b.Shapes()[p.Bucket]
				for _, i := range p.Pairs {
					seen[i]++
					if len(ps[i].Src)+1 > s.S || len(ps[i].Tgt)+1 > s.T {
						t.Errorf("pair %d (%d, %d words) in shape %v", i, len(ps[i].Src), len(ps[i].Tgt), s)
					}
				}
				x := b.NewBatch(p.Bucket)
				b.Fill(p, x)
			}
			for i, n := range seen {
				if n != 1 {
					t.Fatalf("%d buckets: pair %d is in %d batches", buckets, i, n)
				}
			}
		}
	}
}

// FuzzLoad: no input makes Load panic or answer with more than one line.
func FuzzLoad(f *testing.F) {
	for _, s := range []string{"a\tb\n", "a b\tc\td\n\n", "\t\n", "\xff\t\xfe", "x\x00\ty", "\uFEFFa\tb\r\n", "a\tb\nc\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		p := writeTSV(t, text)
		c, err := Load(p, Options{Split: 0.5, MinCount: 1, MinSource: 1, MaxSource: 4, MaxTarget: 4})
		if err != nil {
			if strings.ContainsAny(err.Error(), "\r\n") {
				t.Errorf("multi-line error %q", err)
			}
			return
		}
		b := NewBatcher(c.Train, 3, 4, 4, 2)
		for _, p := range b.Epoch(1, 0) {
			b.Fill(p, b.NewBatch(p.Bucket))
		}
	})
}
