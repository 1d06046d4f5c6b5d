package bpe

import (
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

func corpusText(t testing.TB) string {
	t.Helper()
	data, err := os.ReadFile("../corpus/builtin/tinyshakespeare.txt")
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestEncodeStream(t *testing.T) {
	tok := gpt2Tokenizer(t)
	for name, text := range map[string]string{
		"stress":          stressText(t),
		"tinyshakespeare": corpusText(t),
		// no cut at all: one stretch, the buffer grows
		"no cut": strings.Repeat("ab", chunkSize) + " x",
		"empty":  "",
	} {
		want := tok.Encode(text)
		for rname, r := range map[string]io.Reader{
			"whole":    strings.NewReader(text),
			"one byte": iotest.OneByteReader(strings.NewReader(text)),
			"half":     iotest.HalfReader(strings.NewReader(text)),
			"data+EOF": iotest.DataErrReader(strings.NewReader(text)),
		} {
			if name != "stress" && rname == "one byte" {
				continue // a megabyte a byte at a time: slow and no different
			}
			var got []int
			calls := 0
			err := tok.EncodeStream(r, func(ids []int) error {
				calls++
				got = append(got, ids...)
				return nil
			})
			if err != nil {
				t.Fatalf("%s, %s: %v", name, rname, err)
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s, %s: EncodeStream differs from Encode (%d ids, want %d)", name, rname, len(got), len(want))
			}
			if name == "tinyshakespeare" && rname == "whole" && calls < 2 {
				t.Errorf("the 1.1 MB corpus came in %d stretch(es), want at least 2", calls)
			}
		}
	}
}

func TestEncodeStreamErrors(t *testing.T) {
	tok := gpt2Tokenizer(t)
	boom := errors.New("boom")
	if err := tok.EncodeStream(iotest.ErrReader(boom), func([]int) error { return nil }); !errors.Is(err, boom) {
		t.Errorf("read error: got %v", err)
	}
	if err := tok.EncodeStream(strings.NewReader("a b"), func([]int) error { return boom }); !errors.Is(err, boom) {
		t.Errorf("emit error: got %v", err)
	}
}

func TestEncodeParallel(t *testing.T) {
	tok := gpt2Tokenizer(t)
	text := corpusText(t) + stressText(t)
	want := tok.Encode(text)
	for _, workers := range []int{1, 2, 3, 8} {
		if got := tok.EncodeParallel(text, workers); !slices.Equal(got, want) {
			t.Errorf("EncodeParallel(%d workers) differs from Encode", workers)
		}
	}
}

// Cutting where LastCut says gives the pieces of the whole text.
func TestLastCut(t *testing.T) {
	for _, c := range []struct {
		text string
		want int
	}{
		{"", 0}, {"a", 0}, {"ab", 0}, {"a b", 1}, {"a b c", 3}, {"a  ", 1}, {"a\n\n", 1},
		{" a", 0}, {"  a", 0}, {"é b", 0}, {"\t\n", 0}, {"x. y\r\n", 4},
	} {
		if got := LastCut(c.text); got != c.want {
			t.Errorf("LastCut(%q) = %d, want %d", c.text, got, c.want)
		}
	}
	text := stressText(t)
	whole := Split(text)
	cuts := 0
	for i := 1; i < len(text); i++ {
		if !isCut(text, i) {
			continue
		}
		if cuts++; cuts%10 != 0 {
			continue // a tenth of them is enough, and ten times faster
		}
		if got := append(Split(text[:i]), Split(text[i:])...); !slices.Equal(got, whole) {
			t.Fatalf("cutting stress.txt at %d changes its pieces", i)
		}
	}
}
