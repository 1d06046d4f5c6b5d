package corpus

import (
	"context"
	"errors"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gptg/gptg/tokenfile"
)

// tokenFiles writes train and val as token files and returns their paths.
func tokenFiles(t *testing.T, train, val []int) (string, string) {
	t.Helper()
	dir := t.TempDir()
	tp, vp := filepath.Join(dir, "train.bin"), filepath.Join(dir, "val.bin")
	if err := tokenfile.Write(tp, train); err != nil {
		t.Fatal(err)
	}
	if err := tokenfile.Write(vp, val); err != nil {
		t.Fatal(err)
	}
	return tp, vp
}

// letters is a char vocabulary of the 20 letters a … t: id i is letter i.
func letters(t *testing.T) *Vocab {
	t.Helper()
	v, err := BuildVocab(Char, "abcdefghijklmnopqrst")
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestTokenWindowsByHand: the windows of token files are a text's windows
// with the training split in one file and the test split in the other.
// The same windows as TestWindowsByHand's text, cut at 10.
func TestTokenWindowsByHand(t *testing.T) {
	tp, vp := tokenFiles(t, iota(0, 10), iota(10, 20))
	d, err := LoadTokens(context.Background(), tp, vp, letters(t), 3, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	text, err := Load(writeText(t, "abcdefghijklmnopqrst"), Char, 3, 2, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	if d.Cut != 10 || d.NumTrain() != 3 || d.NumTest() != 3 || d.NumTokens() != 20 || !slices.Equal(d.Tokens(), iota(0, 20)) {
		t.Fatalf("cut %d, train %d, test %d, tokens %v", d.Cut, d.NumTrain(), d.NumTest(), d.Tokens())
	}
	x, y, wx, wy := make([]int, 6), make([]int, 6), make([]int, 6), make([]int, 6)
	for _, w := range [][]int{{2, 0}, {1, 1}} {
		if err := d.TrainBatch(x, y, w); err != nil {
			t.Fatal(err)
		}
		text.TrainBatch(wx, wy, w)
		if !slices.Equal(x, wx) || !slices.Equal(y, wy) {
			t.Fatalf("train windows %v: x %v y %v, the text's x %v y %v", w, x, y, wx, wy)
		}
		if err := d.TestBatch(x, y, w); err != nil {
			t.Fatal(err)
		}
		text.TestBatch(wx, wy, w)
		if !slices.Equal(x, wx) || !slices.Equal(y, wy) {
			t.Fatalf("test windows %v: x %v y %v, the text's x %v y %v", w, x, y, wx, wy)
		}
	}
	// Random windows draw the same offsets from the same stream.
	for _, test := range []bool{false, true} {
		r1, r2 := rand.New(rand.NewPCG(1, 2)), rand.New(rand.NewPCG(1, 2))
		if err := d.RandomBatch(x, y, test, r1); err != nil {
			t.Fatal(err)
		}
		text.RandomBatch(wx, wy, test, r2)
		if !slices.Equal(x, wx) || !slices.Equal(y, wy) {
			t.Fatalf("random windows (test %v): x %v y %v, the text's x %v y %v", test, x, y, wx, wy)
		}
	}
	if m := d.Memory(); m.IDBytes != 0 || m.Tokens != 20 || m.TrainTokens != 10 || !m.Held {
		t.Fatalf("Memory() = %+v: token files hold no ids in memory", m)
	}
	if d.SHA256 == "" || d.Size != 20 || d.ValSHA256 == "" || d.ValSize != 20 || d.SHA256 == d.ValSHA256 {
		t.Fatalf("digests %q %d, %q %d", d.SHA256, d.Size, d.ValSHA256, d.ValSize)
	}
	if n := testing.AllocsPerRun(100, func() { d.TrainBatch(x, y, []int{0, 1}); d.TestBatch(x, y, []int{2, 0}) }); n != 0 {
		t.Fatalf("%v allocations per batch", n)
	}
}

// TestTokensTestSplitOnly: evaluation opens the test split alone.
func TestTokensTestSplitOnly(t *testing.T) {
	_, vp := tokenFiles(t, iota(0, 10), iota(10, 20))
	d, err := LoadTokens(context.Background(), "", vp, letters(t), 3, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	x, y := make([]int, 3), make([]int, 3)
	if d.NumTrain() != 0 || d.NumTest() != 6 || d.Stride != 1 {
		t.Fatalf("train %d test %d windows, stride %d", d.NumTrain(), d.NumTest(), d.Stride)
	}
	if err := d.TestBatch(x, y, []int{5}); err != nil || !slices.Equal(x, []int{15, 16, 17}) || !slices.Equal(y, []int{16, 17, 18}) {
		t.Fatalf("test window 5: x %v y %v, %v", x, y, err)
	}
}

// TestTokenFilesRefused: an id past the vocabulary, and splits too short
// for a window, are refused naming the file.
func TestTokenFilesRefused(t *testing.T) {
	v := letters(t)
	for _, c := range []struct {
		name       string
		train, val []int
		want       string
	}{
		{"id past the vocabulary", iota(0, 10), []int{1, 2, 3, 20, 4}, "val.bin holds id 20 at token 3 (byte offset 6), not below the vocabulary's 20 tokens"},
		{"short training split", iota(0, 4), iota(0, 10), "train.bin has 4 tokens: one training window of context 3 needs at least 5"},
		{"short test split", iota(0, 10), iota(0, 4), "val.bin has 4 tokens: one test window of context 3 needs at least 5"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tp, vp := tokenFiles(t, c.train, c.val)
			d, err := LoadTokens(context.Background(), tp, vp, v, 3, 0)
			var te *tokenfile.Error
			if err == nil {
				d.Close()
			}
			if !errors.As(err, &te) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
}
