package recipe

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/tokenfile"
)

// golden reads a gzipped token file of testdata/nanogpt/shakespeare, made
// by nanoGPT's own prepare.py with tiktoken (mkbin.sh there).
func golden(t *testing.T, name string) []byte {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "testdata", "nanogpt", "shakespeare", name+".gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(z)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sameTokens fails the test at the first token where got and want (token
// files) differ.
func sameTokens(t *testing.T, what string, got, want []byte) {
	t.Helper()
	if bytes.Equal(got, want) {
		return
	}
	n := min(len(got), len(want)) / 2
	for i := range n {
		g, w := binary.LittleEndian.Uint16(got[2*i:]), binary.LittleEndian.Uint16(want[2*i:])
		if g != w {
			t.Fatalf("%s: token %d is %d, nanoGPT's prepare.py wrote %d (%d and %d tokens)", what, i, g, w, len(got)/2, len(want)/2)
		}
	}
	t.Fatalf("%s: %d tokens, nanoGPT's prepare.py wrote %d", what, len(got)/2, len(want)/2)
}

// TestShakespeareIsNanoGPTs: the shakespeare recipe writes, byte for byte,
// the train.bin and val.bin of nanoGPT's data/shakespeare/prepare.py
// (301,966 and 36,059 tokens).
func TestShakespeareIsNanoGPTs(t *testing.T) {
	r, ok := Lookup("shakespeare")
	if !ok || !slices.Equal(config.PrepareRecipes, []string{r.Name}) {
		t.Fatalf("recipes %v, config's %v", All, config.PrepareRecipes)
	}
	dir := t.TempDir()
	tp, vp := filepath.Join(dir, "train.bin"), filepath.Join(dir, "val.bin")
	n, err := r.Write(tp, vp)
	if err != nil {
		t.Fatal(err)
	}
	if n != (Counts{301966, 36059}) {
		t.Errorf("counts %+v, want 301966 and 36059", n)
	}
	for _, c := range []struct{ path, name string }{{tp, "train.bin"}, {vp, "val.bin"}} {
		got, err := os.ReadFile(c.path)
		if err != nil {
			t.Fatal(err)
		}
		sameTokens(t, c.name, got, golden(t, c.name))
	}
}

// TestCutChars: Python's data[:int(len(data)*split)] counts characters,
// not bytes.
func TestCutChars(t *testing.T) {
	for _, c := range []struct {
		text  string
		split float64
		want  string
	}{
		{"abcdefghij", 0.9, "abcdefghi"},
		{"ééééééééé€", 0.9, "ééééééééé"}, // 10 characters, 21 bytes
		{"", 0.9, ""},
		{"abc", 0.9, "ab"}, // int(2.7)
		{"a\U0001F600b\U0001F600c\U0001F600d\U0001F600e\U0001F600", 0.5, "a\U0001F600b\U0001F600c"},
	} {
		if got := c.text[:cutChars(c.text, c.split)]; got != c.want {
			t.Errorf("cut of %q at %v: %q, want %q", c.text, c.split, got, c.want)
		}
	}
}

// TestEnsureFiles: data.prepare makes the two files (and their folders)
// when both are missing, leaves them alone when both are there, and
// refuses to make one beside the other.
func TestEnsureFiles(t *testing.T) {
	dir := t.TempDir()
	d := config.Data{Format: config.FormatTokens, Prepare: "shakespeare", Tokenizer: "gpt2",
		Path: filepath.Join(dir, "data", "shakespeare", "train.bin"), ValPath: filepath.Join(dir, "data", "shakespeare", "val.bin")}
	var log bytes.Buffer
	if err := EnsureFiles(d, &log); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "are missing: preparing them with nanoGPT's shakespeare recipe") || !strings.Contains(log.String(), "(301966 tokens)") {
		t.Errorf("log %q", log.String())
	}
	got, err := os.ReadFile(d.ValPath)
	if err != nil {
		t.Fatal(err)
	}
	sameTokens(t, "val.bin", got, golden(t, "val.bin"))

	// Both there: nothing is written, even over other content.
	if err := os.WriteFile(d.ValPath, []byte("ab"), 0o644); err != nil {
		t.Fatal(err)
	}
	log.Reset()
	if err := EnsureFiles(d, &log); err != nil || log.Len() != 0 {
		t.Fatalf("with both files there: %v, log %q", err, log.String())
	}
	if b, _ := os.ReadFile(d.ValPath); string(b) != "ab" {
		t.Fatal("a file that was there was replaced")
	}

	// One of them missing: refused, nothing made.
	if err := os.Remove(d.Path); err != nil {
		t.Fatal(err)
	}
	err = EnsureFiles(d, &log)
	var te *tokenfile.Error
	if !errors.As(err, &te) || !strings.Contains(err.Error(), "train.bin is missing and ") {
		t.Fatalf("train.bin missing beside val.bin: %v", err)
	}
	if _, err := os.Stat(d.Path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("train.bin was made beside an old val.bin: %v", err)
	}
}

// TestWriteLeavesNothingOnError: when the validation file cannot be
// written, the training file is not left behind either.
func TestWriteLeavesNothingOnError(t *testing.T) {
	dir := t.TempDir()
	r, _ := Lookup("shakespeare")
	tp := filepath.Join(dir, "train.bin")
	if _, err := r.Write(tp, filepath.Join(dir, "no", "such", "folder", "val.bin")); err == nil {
		t.Fatal("written into a missing folder")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 0 {
		t.Fatalf("left behind: %v", entries)
	}
}
