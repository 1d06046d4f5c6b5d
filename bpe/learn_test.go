package bpe

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// naiveLearn is minbpe's training loop on counted pieces, written the slow
// way: every round recounts every pair of every piece.
func naiveLearn(counts map[string]int, merges int) ([][2]int, []int) {
	var pieces [][]int
	var weights []int
	for p, w := range counts {
		ids := make([]int, len(p))
		for i := range len(p) {
			ids[i] = int(p[i])
		}
		pieces, weights = append(pieces, ids), append(weights, w)
	}
	var out [][2]int
	var outCounts []int
	for len(out) < merges {
		stats := map[[2]int]int{}
		for i, ids := range pieces {
			for j := 0; j+1 < len(ids); j++ {
				stats[[2]int{ids[j], ids[j+1]}] += weights[i]
			}
		}
		var best [2]int
		bestCount := 0
		for p, c := range stats {
			if c > bestCount || c == bestCount && (p[0] < best[0] || p[0] == best[0] && p[1] < best[1]) {
				best, bestCount = p, c
			}
		}
		if bestCount == 0 {
			break
		}
		id := MinVocab + len(out)
		for i, ids := range pieces {
			pieces[i] = mergeIDs(ids, best, id)
		}
		out, outCounts = append(out, best), append(outCounts, bestCount)
	}
	return out, outCounts
}

// mergeIDs replaces the occurrences of p in ids, left to right, by id.
func mergeIDs(ids []int, p [2]int, id int) []int {
	var out []int
	for i := 0; i < len(ids); {
		if i+1 < len(ids) && ids[i] == p[0] && ids[i+1] == p[1] {
			out, i = append(out, id), i+2
		} else {
			out, i = append(out, ids[i]), i+1
		}
	}
	return out
}

// TestLearnCountsMatchesNaive compares the incremental learner with the
// full recount on random pieces over a few letters: long runs of one
// letter (overlapping pairs), many ties, pieces that lose a pair to an
// earlier merge. It learns until no pair is left.
func TestLearnCountsMatchesNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		counts := map[string]int{}
		alphabet := "aab c\xc3\xb1"[:2+rng.IntN(6)]
		for range 1 + rng.IntN(30) {
			var b strings.Builder
			for range 1 + rng.IntN(12) {
				b.WriteByte(alphabet[rng.IntN(len(alphabet))])
			}
			counts[b.String()] += 1 + rng.IntN(3)
		}
		want, wantCounts := naiveLearn(counts, 1<<20)
		got, gotCounts, err := LearnCounts(counts, MinVocab+len(want), nil)
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		if !slices.Equal(got, want) || !slices.Equal(gotCounts, wantCounts) {
			t.Fatalf("trial %d on %v:\n got %v %v\nwant %v %v", trial, counts, got, gotCounts, want, wantCounts)
		}
		if _, _, err := LearnCounts(counts, MinVocab+len(want)+1, nil); err == nil {
			t.Fatalf("trial %d: one merge more than there are pairs for was not refused", trial)
		}
	}
}

func TestLearnOverlappingRun(t *testing.T) {
	// "aaaaa" holds (a,a) four times; merged left to right it is X X a,
	// which holds (X,X) once and (X,a) once: a tie, the lower pair (X,a)
	// first, which leaves X Y.
	got, counts, err := LearnCounts(map[string]int{"aaaaa": 1}, MinVocab+3, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := [][2]int{{'a', 'a'}, {256, 'a'}, {256, 257}}
	if !slices.Equal(got, want) || !slices.Equal(counts, []int{4, 1, 1}) {
		t.Fatalf("got %v %v, want %v [4 1 1]", got, counts, want)
	}
}

func TestLearnRefusesVocabSize(t *testing.T) {
	for _, tc := range []struct {
		vocab int
		want  string
	}{
		{255, "at least 256 tokens"},
		{0, "at least 256 tokens"},
		{MinVocab + 3, "allows only 2 merges (vocab_size at most 258)"},
	} {
		_, _, err := LearnCounts(map[string]int{"abc": 1}, tc.vocab, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("vocab %d: error %v, want one line with %q", tc.vocab, err, tc.want)
		}
	}
	if got, _, err := LearnCounts(map[string]int{"abc": 1}, MinVocab, nil); err != nil || len(got) != 0 {
		t.Errorf("vocab 256: %v, %v; want no merges", got, err)
	}
}

func TestLearnProgress(t *testing.T) {
	var calls [][2]int
	rng := rand.New(rand.NewPCG(3, 4))
	text := make([]byte, 1000)
	for i := range text {
		text[i] = byte('a' + rng.IntN(26))
	}
	_, _, err := LearnCounts(map[string]int{string(text): 1}, MinVocab+130, func(done, total int) error {
		calls = append(calls, [2]int{done, total})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := [][2]int{{0, 130}, {64, 130}, {128, 130}, {130, 130}}
	if !slices.Equal(calls, want) {
		t.Fatalf("progress calls %v, want %v", calls, want)
	}
	stop := errors.New("stop")
	_, _, err = LearnCounts(map[string]int{string(text): 1}, MinVocab+130, func(done, total int) error {
		if done == 64 {
			return stop
		}
		return nil
	})
	if err != stop {
		t.Fatalf("a progress func's error: learning returned %v", err)
	}
}

// trickyWords are what random texts for the pre-split are made of:
// contractions and their beginnings, runs of white space of every width
// (U+3000 is three bytes), letters, numbers and punctuation of one to four
// bytes, a combining mark.
var trickyWords = []string{"'", "'s", "'ll", "'l", "'r", "'ve", "'v", "l", "re", "x", " ", "  ", "\n", "\n\n", " \n", "\t", "\u3000",
	"a", "ñ", "é", "日本", "12", "٣", "!", "?!", "—", "“", "🙂", "a\u0301"}

func randomText(rng *rand.Rand, words int) string {
	var b strings.Builder
	for range words {
		b.WriteString(trickyWords[rng.IntN(len(trickyWords))])
	}
	return b.String()
}

// TestPieceCounterLimit checks that a limited count holds the pieces
// before the first cut at or after the limit, and End is that cut.
func TestPieceCounterLimit(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for range 500 {
		text := randomText(rng, 100)
		limit := 1 + rng.IntN(len(text))
		end := len(text)
		for i := limit; i < len(text); i++ {
			if i > 0 && strings.ContainsRune(" \n\t\r", rune(text[i])) && text[i-1] < 0x80 && !strings.ContainsRune(" \n\t\r\v\f", rune(text[i-1])) {
				end = i
				break
			}
		}
		want := map[string]int{}
		for _, p := range Split(text[:end]) {
			want[p]++
		}
		// The tokens of the part are the whole text's first ones.
		if whole, part := Split(text), Split(text[:end]); !slices.Equal(whole[:len(part)], part) {
			t.Fatalf("%q cut at %d splits as %q, the whole as %q", text, end, part, whole)
		}
		c := PieceCounter{Limit: int64(limit)}
		for rest := text; len(rest) > 0 && !c.Full(); {
			n := min(len(rest), 1+rng.IntN(10))
			for n < len(rest) && !utf8.RuneStart(rest[n]) {
				n++
			}
			c.AddString(rest[:n])
			rest = rest[n:]
		}
		if got := c.Counts(); !maps.Equal(got, want) || c.End() != int64(end) {
			t.Fatalf("%q limited to %d: counts %v ending at %d, want %v ending at %d", text, limit, got, c.End(), want, end)
		}
	}
}

// TestPieceCounterParts feeds texts to a PieceCounter in parts cut at
// random character boundaries, many of them next to a contraction or in a
// run of white space, and compares the counts with those of Split on the
// whole text.
func TestPieceCounterParts(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	texts := []string{string(readFile(t, "../corpus/builtin/bible-en-es.tsv")[:300_000])}
	for range 50 {
		texts = append(texts, randomText(rng, rng.IntN(400)))
	}
	for i, text := range texts {
		want := map[string]int{}
		for _, p := range Split(text) {
			want[p]++
		}
		for trial := range 20 {
			var c PieceCounter
			for rest := text; len(rest) > 0; {
				n := min(len(rest), rng.IntN(8))
				if len(text) > 10_000 {
					n = min(len(rest), rng.IntN(50_000))
				}
				for n < len(rest) && !utf8.RuneStart(rest[n]) {
					n++
				}
				if trial%2 == 0 {
					c.Add([]byte(rest[:n]))
				} else {
					c.AddString(rest[:n])
				}
				rest = rest[n:]
			}
			got := c.Counts()
			if !maps.Equal(got, want) {
				t.Fatalf("text %d, trial %d: the counts of the parts differ from those of the whole (%d distinct pieces, want %d): %q", i, trial, len(got), len(want), text)
			}
		}
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// learnGolden is a file learnref.py writes: the merges its independent
// implementation of minbpe's training learned on bytes [start, end) of
// file, and the ids its encoder gives bytes [heldout_start, heldout_end).
type learnGolden struct {
	File         string   `json:"file"`
	Start        int      `json:"start"`
	End          int      `json:"end"`
	HeldoutStart int      `json:"heldout_start"`
	HeldoutEnd   int      `json:"heldout_end"`
	VocabSize    int      `json:"vocab_size"`
	Merges       [][2]int `json:"merges"`
	Counts       []int    `json:"counts"`
	HeldoutIDs   []int    `json:"heldout_ids"`
}

func readLearnGolden(t *testing.T) []learnGolden {
	t.Helper()
	paths, err := filepath.Glob("testdata/learn/*.json")
	if err != nil || len(paths) < 5 {
		t.Fatalf("golden files: %v, %v", paths, err)
	}
	var out []learnGolden
	for _, p := range paths {
		var g learnGolden
		if err := json.Unmarshal(readFile(t, p), &g); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		out = append(out, g)
	}
	return out
}

// TestLearnGolden compares Learn's merges with learnref.py's, merge by
// merge. A text that allows fewer merges than asked (ties.txt) must be
// refused with the number the reference found.
func TestLearnGolden(t *testing.T) {
	for _, g := range readLearnGolden(t) {
		data := readFile(t, filepath.Join("..", g.File))
		text := string(data[g.Start:g.End])
		var c PieceCounter
		c.AddString(text)
		got, counts, err := LearnCounts(c.Counts(), MinVocab+len(g.Merges), nil)
		if err != nil {
			t.Fatalf("%s at vocab %d: %v", g.File, g.VocabSize, err)
		}
		for i := range g.Merges {
			if got[i] != g.Merges[i] || counts[i] != g.Counts[i] {
				t.Fatalf("%s at vocab %d: merge %d is %v (%d times), the reference's %v (%d times)", g.File, g.VocabSize, i, got[i], counts[i], g.Merges[i], g.Counts[i])
			}
		}
		if merges, err := Learn(text, MinVocab+len(g.Merges), nil); err != nil || !slices.Equal(merges, got) {
			t.Fatalf("%s at vocab %d: Learn differs from LearnCounts: %v", g.File, g.VocabSize, err)
		}
		tok, err := NewLearned(got)
		if err != nil {
			t.Fatalf("%s at vocab %d: %v", g.File, g.VocabSize, err)
		}
		held := string(data[g.HeldoutStart:g.HeldoutEnd])
		if ids := tok.Encode(held); !slices.Equal(ids, g.HeldoutIDs) {
			t.Errorf("%s at vocab %d: the held-out text encodes to %d ids, the reference's to %d, first difference at %d",
				g.File, g.VocabSize, len(ids), len(g.HeldoutIDs), firstDiff(ids, g.HeldoutIDs))
		}
		if back := string(tok.Decode(g.HeldoutIDs)); back != held {
			t.Errorf("%s at vocab %d: the reference's ids do not decode to the held-out text", g.File, g.VocabSize)
		}
		if len(g.Merges) < g.VocabSize-MinVocab {
			_, err := Learn(text, g.VocabSize, nil)
			want := fmt.Sprintf("allows only %d merges", len(g.Merges))
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s at vocab %d: error %v, want %q", g.File, g.VocabSize, err, want)
			}
		}
	}
}

func firstDiff(a, b []int) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
