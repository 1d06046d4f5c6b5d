package corpus

import (
	"context"
	"encoding/json"
	"os"
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
