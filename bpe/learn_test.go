package bpe

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// naiveLearn is minbpe's training loop on counted pieces, written the slow
// way: every round recounts every pair of every piece.
func naiveLearn(counts map[string]int, merges int) [][2]int {
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
		out = append(out, best)
	}
	return out
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
		want := naiveLearn(counts, 1<<20)
		got, err := LearnCounts(counts, MinVocab+len(want), nil)
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d on %v:\n got %v\nwant %v", trial, counts, got, want)
		}
		if _, err := LearnCounts(counts, MinVocab+len(want)+1, nil); err == nil {
			t.Fatalf("trial %d: one merge more than there are pairs for was not refused", trial)
		}
	}
}

func TestLearnOverlappingRun(t *testing.T) {
	// "aaaaa" holds (a,a) four times; merged left to right it is X X a,
	// which holds (X,X) once and (X,a) once: a tie, the lower pair (X,a)
	// first, which leaves X Y.
	got, err := LearnCounts(map[string]int{"aaaaa": 1}, MinVocab+3, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := [][2]int{{'a', 'a'}, {256, 'a'}, {256, 257}}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
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
		_, err := LearnCounts(map[string]int{"abc": 1}, tc.vocab, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("vocab %d: error %v, want one line with %q", tc.vocab, err, tc.want)
		}
	}
	if got, err := LearnCounts(map[string]int{"abc": 1}, MinVocab, nil); err != nil || len(got) != 0 {
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
	_, err := LearnCounts(map[string]int{string(text): 1}, MinVocab+130, func(done, total int) {
		calls = append(calls, [2]int{done, total})
	})
	if err != nil {
		t.Fatal(err)
	}
	want := [][2]int{{0, 130}, {64, 130}, {128, 130}, {130, 130}}
	if !slices.Equal(calls, want) {
		t.Fatalf("progress calls %v, want %v", calls, want)
	}
}

// TestCountPiecesChunks checks that counting a chunk at a time cuts only
// where a split of the whole text cuts too, with a splitter that keeps
// every line whole: a cut inside a line would show as a piece that is part
// of one.
func TestCountPiecesChunks(t *testing.T) {
	text := strings.Repeat("one line\nand \n\nx\n", 200_000)
	byLine := func(s string) []string {
		lines := strings.SplitAfter(s, "\n")
		if lines[len(lines)-1] == "" {
			lines = lines[:len(lines)-1]
		}
		return lines
	}
	got := CountPieces(text, byLine)
	want := map[string]int{}
	for _, l := range byLine(text) {
		want[l]++
	}
	if len(text) < 2*countChunk {
		t.Fatalf("text of %d bytes is one chunk", len(text))
	}
	if len(got) != len(want) {
		t.Fatalf("%d distinct pieces, want %d", len(got), len(want))
	}
	for p, n := range want {
		if got[p] != n {
			t.Errorf("piece %q counted %d times, want %d", p, got[p], n)
		}
	}
}

func TestChunkEnd(t *testing.T) {
	for _, tc := range []struct {
		text       string
		from, want int
	}{
		{"ab\ncd", 1, 3},
		{"ab \ncd\nef", 1, 7},  // after a space: not safe
		{"ab\n cd\nef", 1, 7},  // before a space: not safe
		{"ab\n\ncd\nef", 1, 7}, // a run of newlines: not safe
		{"é\ncd\nef", 1, 6},    // after a byte of a longer character: not safe
		{"abcd\n", 1, 5},       // no character after it: the end
		{"a\nb\nc", 3, 4},      // the first newline is before from
		{"a\nb", 2, 3},         // no newline from there: the end
	} {
		if got := chunkEnd(tc.text, tc.from); got != tc.want {
			t.Errorf("chunkEnd(%q, %d) = %d, want %d", tc.text, tc.from, got, tc.want)
		}
	}
}
