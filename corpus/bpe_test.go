package corpus

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestLearnBPEGolden learns tokenizer = "bpe"'s merges on the training
// split of tiny-shakespeare and compares them, and where the split ends,
// with bpe/testdata/learnref.py's (an independent implementation of
// minbpe's training, which cuts the split by its own code).
func TestLearnBPEGolden(t *testing.T) {
	b, err := os.ReadFile("../bpe/testdata/learn/shakespeare-split-4352.json")
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		End    int64    `json:"end"`
		Merges [][2]int `json:"merges"`
		Counts []int    `json:"counts"`
	}
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	var calls int
	got, err := LearnBPE(context.Background(), "builtin:tinyshakespeare", 4352, 0.9, func(done, total int) error {
		calls++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got.TrainBytes != g.End {
		t.Errorf("training split of %d bytes, the reference's %d", got.TrainBytes, g.End)
	}
	if !slices.Equal(got.Merges, g.Merges) || !slices.Equal(got.Counts, g.Counts) {
		t.Errorf("the merges or their counts differ from the reference's")
	}
	if calls != 4096/64+1 {
		t.Errorf("progress called %d times, want %d", calls, 4096/64+1)
	}
}

func TestLearnBPERefuses(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := dir + "/" + name
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		path  string
		vocab int
		want  string
	}{
		{write("short.txt", "abc abc abc abd\n"), 300, "learning data.vocab_size = 300 tokens on its training split (15 bytes): the text allows only 5 merges (vocab_size at most 261)"},
		{write("nocut.txt", "日本語の文章。日本語の文章。"), 300, "has no space, tab or newline after a character that is not one from byte 37"},
		{write("bad.txt", "abc \xff"), 300, "not valid UTF-8"},
		{"builtin:nothing", 300, "there is no built-in corpus"},
	} {
		_, err := LearnBPE(context.Background(), tc.path, tc.vocab, 0.9, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.path, err, tc.want)
		}
	}
}

// TestLoadBPE reads a text of two chunks and more with a learned BPE,
// with the training split ending at and around the first chunk's end,
// and checks the ids against encoding the whole text at once and the
// split against encoding its training part alone.
func TestLoadBPE(t *testing.T) {
	var b strings.Builder
	for i := 0; b.Len() < 2<<20+1000; i++ {
		fmt.Fprintf(&b, "verse %d: the word, é, and ñ; ", i)
		if i%7 == 0 {
			b.WriteString("\n\n")
		}
	}
	text := b.String()
	path := filepath.Join(t.TempDir(), "t.txt")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	learned, err := LearnBPE(context.Background(), path, 400, 0.5, nil)
	if err != nil {
		t.Fatal(err)
	}
	vocab, err := NewLearnedVocab(learned.Merges)
	if err != nil {
		t.Fatal(err)
	}
	all, _ := vocab.Encode(text)
	for from := 1<<20 - 40; from <= 1<<20+40; from += 8 {
		split := (float64(from) + 0.5) / float64(len(text))
		end := from
		for !(strings.IndexByte(" \t\r\n", text[end]) >= 0 && text[end-1] < 0x80 && strings.IndexByte(" \t\n\v\f\r", text[end-1]) < 0) {
			end++
		}
		d, err := LoadBPE(context.Background(), path, vocab, 8, 0, split)
		if err != nil {
			t.Fatal(err)
		}
		train, _ := vocab.Encode(text[:end])
		if d.Cut != len(train) || !slices.Equal(d.Tokens(), all) {
			t.Fatalf("split at byte %d (cut at %d): cut %d tokens, want %d; tokens equal: %v", from, end, d.Cut, len(train), slices.Equal(d.Tokens(), all))
		}
		if from == 1<<20 {
			if l, err := LearnBPE(context.Background(), path, 257, split, nil); err != nil || l.TrainBytes != int64(end) {
				t.Fatalf("LearnBPE ends the training split at %v, %v; LoadBPE at %d", l, err, end)
			}
		}
	}
	if vocab.Decode(all) != text {
		t.Fatal("the ids do not decode to the text")
	}
}

func TestNewLearnedVocabRefuses(t *testing.T) {
	doubling := [][2]int{{97, 97}}
	for i := range 30 {
		doubling = append(doubling, [2]int{256 + i, 256 + i})
	}
	for _, tc := range []struct {
		merges [][2]int
		want   string
	}{
		{[][2]int{{97, 256}}, "merge 0 (97, 256) names an id not made before it (ids 0..255 are)"},
		{[][2]int{{-1, 3}}, "names an id not made before it"},
		{[][2]int{{97, 98}, {97, 98}}, "repeats merge 0"},
		{doubling, "the tokens of the merges take more than 64 MiB in all"},
	} {
		_, err := NewLearnedVocab(tc.merges)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.merges[:min(3, len(tc.merges))], err, tc.want)
		}
	}
}
