package recipe

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gptg/gptg/bpe"
	"github.com/gptg/gptg/corpus"
	"github.com/gptg/gptg/corpus/builtin"
	"github.com/gptg/gptg/internal/inputfile"
	"github.com/gptg/gptg/tokenfile"
)

// fromText runs FromText on text written to a file, returning the two
// token files' bytes.
func fromText(t *testing.T, text string, split float64) ([]byte, []byte, Counts) {
	t.Helper()
	dir := t.TempDir()
	in := filepath.Join(dir, "input.txt")
	if err := os.WriteFile(in, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	tp, vp := filepath.Join(dir, "train.bin"), filepath.Join(dir, "val.bin")
	last := 0
	n, err := FromText(context.Background(), in, split, tp, vp, func(done, total int) error {
		if done < last || done > total || total != 2*len(text) {
			t.Errorf("progress %d of %d after %d (the text has %d bytes, read twice)", done, total, last, len(text))
		}
		last = done
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if last != 2*len(text) {
		t.Errorf("progress ended at %d of %d", last, 2*len(text))
	}
	train, err := os.ReadFile(tp)
	if err != nil {
		t.Fatal(err)
	}
	val, err := os.ReadFile(vp)
	if err != nil {
		t.Fatal(err)
	}
	if len(train) != 2*n.Train || len(val) != 2*n.Val {
		t.Errorf("counts %+v for files of %d and %d bytes", n, len(train), len(val))
	}
	return train, val, n
}

// TestFromTextIsNanoGPTs: tiny-shakespeare as a file, split 0.9, gives the
// train.bin and val.bin nanoGPT's own prepare.py wrote (testdata).
func TestFromTextIsNanoGPTs(t *testing.T) {
	text, err := builtin.Bytes("tinyshakespeare")
	if err != nil {
		t.Fatal(err)
	}
	train, val, n := fromText(t, string(text), 0.9)
	sameTokens(t, "train.bin", train, golden(t, "train.bin"))
	sameTokens(t, "val.bin", val, golden(t, "val.bin"))
	if n != (Counts{301966, 36059}) {
		t.Errorf("counts %+v", n)
	}
}

// TestFromTextAcrossChunks: a text of several of the reader's megabyte
// chunks, with characters of 2 to 4 bytes and the cut in a later chunk,
// gives the ids of each side encoded whole in memory.
func TestFromTextAcrossChunks(t *testing.T) {
	shakespeare, err := builtin.Bytes("tinyshakespeare")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i := range 3 {
		b.Write(shakespeare)
		b.WriteString([]string{"café naïve ", "我们 去 ", "🙂👍🏽 x\n"}[i])
	}
	text := b.String()
	enc, err := bpe.GPT2()
	if err != nil {
		t.Fatal(err)
	}
	for _, split := range []float64{0.9, 0.35, 0.999999} {
		train, val, _ := fromText(t, text, split)
		cut := cutChars(text, split)
		for _, side := range []struct {
			name string
			got  []byte
			text string
		}{{"train.bin", train, text[:cut]}, {"val.bin", val, text[cut:]}} {
			var want strings.Builder
			if err := tokenfile.Encode(&want, enc.Encode(side.text)); err != nil {
				t.Fatal(err)
			}
			if side.got == nil || string(side.got) != want.String() {
				t.Errorf("split %v: %s differs from the encoding of its %d bytes in memory (%d and %d bytes)", split, side.name, len(side.text), len(side.got), want.Len())
			}
		}
	}
}

// TestFromTextRefuses: a text that is not one leaves no file behind.
func TestFromTextRefuses(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct {
		name, path string
		split      float64
		want       string
		input      bool // an *inputfile.Error (the command's exit 2)
	}{
		{"not UTF-8", write("bad.txt", strings.Repeat("ok ", 1000)+"caf\xe9"), 0.9, "bad.txt: text is not valid UTF-8 (bad byte 0xe9 at offset 3003)", false},
		{"missing", filepath.Join(dir, "nope.txt"), 0.9, "nope.txt does not exist", true},
		{"empty", write("empty.txt", ""), 0.9, "empty.txt is empty", true},
		{"too short", write("a.txt", "a"), 0.9, "a.txt is too short for split 0.9: 0 training and 1 validation tokens", true},
		{"a folder", dir, 0.9, "is a directory", true},
	} {
		tp, vp := filepath.Join(dir, "train.bin"), filepath.Join(dir, "val.bin")
		_, err := FromText(context.Background(), c.path, c.split, tp, vp, nil)
		var ie *inputfile.Error
		switch {
		case err == nil:
			t.Errorf("%s: no error", c.name)
		case !strings.Contains(err.Error(), c.want):
			t.Errorf("%s: %v, want %q in it", c.name, err, c.want)
		case c.input != errors.As(err, &ie):
			t.Errorf("%s: %v is an input error: %v, want %v", c.name, err, !c.input, c.input)
		}
		if c.name == "not UTF-8" && !errors.Is(err, corpus.ErrNotUTF8) {
			t.Errorf("%s: %v is not corpus.ErrNotUTF8", c.name, err)
		}
		for _, p := range []string{tp, vp} {
			if _, err := os.Stat(p); err == nil {
				t.Errorf("%s: %s left behind", c.name, filepath.Base(p))
			}
		}
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".") {
				t.Errorf("%s: temporary file %s left behind", c.name, e.Name())
			}
		}
	}
}
