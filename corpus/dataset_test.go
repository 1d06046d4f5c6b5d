package corpus

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// writeText puts text in a fresh temporary file and returns its path.
func writeText(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "data.txt")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// iota returns lo, lo+1, ..., hi-1.
func iota(lo, hi int) []int {
	s := make([]int, 0, hi-lo)
	for i := lo; i < hi; i++ {
		s = append(s, i)
	}
	return s
}

func TestWindowsByHand(t *testing.T) {
	// 20 distinct letters in order, so token id == position in the text.
	d, err := Load(writeText(t, "abcdefghijklmnopqrst"), Char, 3, 2, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	if d.Vocab.Size() != 20 || !slices.Equal(d.Tokens(), iota(0, 20)) {
		t.Fatalf("vocab %d, tokens %v", d.Vocab.Size(), d.Tokens())
	}
	// cut = int(20*0.5) = 10. Each side has 10 tokens: n = (10-3-1+2-1)//2 = 3,
	// starts 0, 2, 4 (all < 10-3-1 = 6); test starts 10, 12, 14.
	if d.Cut != 10 || d.NumTrain() != 3 || d.NumTest() != 3 {
		t.Fatalf("cut %d, train %d, test %d", d.Cut, d.NumTrain(), d.NumTest())
	}
	x, y := make([]int, 6), make([]int, 6)
	d.TrainBatch(x, y, []int{2, 0})
	if !slices.Equal(x, []int{4, 5, 6, 0, 1, 2}) || !slices.Equal(y, []int{5, 6, 7, 1, 2, 3}) {
		t.Fatalf("train batch x %v y %v", x, y)
	}
	d.TestBatch(x, y, []int{0, 2})
	if !slices.Equal(x, []int{10, 11, 12, 14, 15, 16}) || !slices.Equal(y, []int{11, 12, 13, 15, 16, 17}) {
		t.Fatalf("test batch x %v y %v", x, y)
	}
	if d.TestBatches(2) != 1 || d.TestBatches(3) != 1 || d.TestBatches(4) != 0 {
		t.Fatalf("TestBatches: %d %d %d", d.TestBatches(2), d.TestBatches(3), d.TestBatches(4))
	}
}

func TestWindowCountEdges(t *testing.T) {
	// start < n-context-1, so with n = context+2 there is exactly one window,
	// and with n = context+1 none: the reference never uses the last token
	// as a target of the last window when it would fit exactly.
	cases := []struct{ n, context, stride, want int }{
		{5, 3, 1, 1},
		{4, 3, 1, 0},
		{0, 3, 1, 0},
		{6, 3, 1, 2},
		{6, 3, 2, 1},
		{7, 3, 2, 2},
		{1003854, 32, 16, 62739},
		{111540, 32, 16, 6970},
	}
	for _, c := range cases {
		if got := numWindows(c.n, c.context, c.stride); got != c.want {
			t.Errorf("numWindows(%d, %d, %d) = %d, want %d", c.n, c.context, c.stride, got, c.want)
		}
	}
}

func TestCutMatchesPython(t *testing.T) {
	// Values from Python's int(n * split); 100*0.57 is 56.99999999999999.
	cases := []struct {
		n     int
		split float64
		want  int
	}{{100, 0.57, 56}, {10, 0.3, 3}, {29, 0.9, 26}, {1115394, 0.9, 1003854}}
	for _, c := range cases {
		if got := cutAt(c.n, c.split); got != c.want {
			t.Errorf("cutAt(%d, %v) = %d, want %d", c.n, c.split, got, c.want)
		}
	}
}

func TestStrideDefault(t *testing.T) {
	path := writeText(t, strings.Repeat("abcdefghij", 10))
	for _, c := range []struct{ context, want int }{{8, 4}, {3, 1}, {1, 1}} {
		d, err := Load(path, Char, c.context, 0, 0.5)
		if err != nil {
			t.Fatal(err)
		}
		if d.Stride != c.want {
			t.Errorf("context %d: stride %d, want %d", c.context, d.Stride, c.want)
		}
	}
}

func TestLoadWords(t *testing.T) {
	d, err := Load(writeText(t, "b a c a b\nd a c"), Word, 1, 1, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	// vocab a b c d; tokens b a c a | b d a c (cut = int(8*0.5) = 4).
	if !slices.Equal(d.Tokens(), []int{1, 0, 2, 0, 1, 3, 0, 2}) || d.Cut != 4 {
		t.Fatalf("tokens %v cut %d", d.Tokens(), d.Cut)
	}
	// 4 tokens, context 1: starts < 2, so 0 and 1.
	if d.NumTrain() != 2 || d.NumTest() != 2 {
		t.Fatalf("train %d test %d", d.NumTrain(), d.NumTest())
	}
	x, y := make([]int, 1), make([]int, 1)
	d.TestBatch(x, y, []int{1})
	if d.Vocab.Decode(x) != "d" || d.Vocab.Decode(y) != "a" {
		t.Fatalf("test window 1: x %v y %v", x, y)
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name, path string
		want       string
	}{
		{"missing", filepath.Join(dir, "nope.txt"), "data file " + filepath.Join(dir, "nope.txt") + " does not exist"},
		{"directory", dir, "data file " + dir + " is a directory"},
		{"empty", writeText(t, ""), "is empty"},
		{"invalid UTF-8", writeText(t, "ab\xffcd"), "not valid UTF-8 (bad byte 0xff at offset 2)"},
		// context 3, split 0.5: each side needs 5 tokens, so 10 in all.
		{"too short", writeText(t, "abcdefghi"), "has 9 char tokens; context 3 with split 0.5 needs at least 10"},
	}
	for _, c := range cases {
		_, err := Load(c.path, Char, 3, 2, 0.5)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
			continue
		}
		if !strings.Contains(err.Error(), c.path) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %q should be one line naming the path", c.name, err)
		}
	}
	if _, err := Load(writeText(t, "abcdefghij"), Char, 3, 2, 0.5); err != nil {
		t.Errorf("the minimum size should load: %v", err)
	}
}

func TestLoadRejectsSettings(t *testing.T) {
	path := writeText(t, strings.Repeat("abcdefghij", 10))
	for _, c := range []struct {
		context, stride int
		split           float64
		want            string
	}{
		{0, 1, 0.5, "context"},
		{4, -1, 0.5, "stride"},
		{4, 1, 1, "split"},
		{4, 1, 0, "split"},
	} {
		if _, err := Load(path, Char, c.context, c.stride, c.split); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err = %v", c, err)
		}
	}
}

func TestMinTokens(t *testing.T) {
	for _, c := range []struct {
		context int
		split   float64
	}{{3, 0.5}, {32, 0.9}, {1, 0.99}, {7, 0.1}, {5, 0.999}, {2, 0.01}, {16, 0.57}} {
		n := minTokens(c.context, c.split)
		ok := func(n int) bool {
			cut := cutAt(n, c.split)
			return numWindows(cut, c.context, 1) > 0 && numWindows(n-cut, c.context, 1) > 0
		}
		if !ok(n) || ok(n-1) {
			t.Errorf("minTokens(%d, %v) = %d is not the smallest size that works", c.context, c.split, n)
		}
	}
}

func TestBatchDoesNotAllocate(t *testing.T) {
	d, err := Load(writeText(t, strings.Repeat("the quick brown fox ", 20)), Char, 8, 0, 0.9)
	if err != nil {
		t.Fatal(err)
	}
	x, y, w := make([]int, 16), make([]int, 16), []int{0, 1}
	if n := testing.AllocsPerRun(100, func() { d.TrainBatch(x, y, w); d.TestBatch(x, y, w) }); n != 0 {
		t.Fatalf("%v allocations per batch", n)
	}
}

func TestBatchPanicsOnMisuse(t *testing.T) {
	d, err := Load(writeText(t, "abcdefghijklmnopqrst"), Char, 3, 2, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]func(){
		"short x":      func() { d.TrainBatch(make([]int, 2), make([]int, 3), []int{0}) },
		"window <0":    func() { d.TrainBatch(make([]int, 3), make([]int, 3), []int{-1}) },
		"window = len": func() { d.TestBatch(make([]int, 3), make([]int, 3), []int{3}) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}
