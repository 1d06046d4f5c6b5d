package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gptg/gptg/internal/testmodel"
)

// The rows and tests of this file are inputs that would reach an
// allocation or a loop sized by them: a model beyond what the process may
// use, corpora of too many words or pairs, strides and thread counts that
// overflow, pictures too large to draw, outputs built whole in memory.
// Each is refused at once or done in bounded memory.

func limitInputs(t *testing.T) []badInput {
	return []badInput{
		{name: "word corpus: more distinct words than a vocabulary may have", setup: func(t *testing.T, dir string) {
			var b strings.Builder
			for i := range 1<<20 + 1 {
				fmt.Fprintf(&b, "w%d ", i)
			}
			if err := os.WriteFile(filepath.Join(dir, "w.txt"), []byte(b.String()), 0o644); err != nil {
				t.Fatal(err)
			}
		}, files: map[string]string{"w.toml": "[data]\npath = \"w.txt\"\ntokenizer = \"word\"\n"},
			args: []string{"graph", "w.toml"}, code: 1, msg: "data file w.txt: text has more than 1048576 distinct words"},
		{name: "config: train.threads = 2^31", files: map[string]string{"c.toml": "[data]\npath = \"builtin:toy\"\n[train]\nthreads = 2147483648\n"},
			args: []string{"graph", "c.toml"}, code: 2, msg: "train.threads: 2147483648 is out of range (allowed: 0..4096)"},
	}
}

// TestProcessMemoryLimit: a model within train.max_memory (8 GiB by
// default) but beyond what the process may use (here ulimit -v 2.4 GiB,
// as a small container would give) is refused in one line with exit 2
// before anything is allocated, not trained into the Go runtime's "fatal
// error: out of memory" trace.
func TestProcessMemoryLimit(t *testing.T) {
	dir := t.TempDir()
	cfg := "[data]\npath = \"builtin:tinyshakespeare\"\n[model]\ncontext = 512\nembedding = 256\nblocks = 4\nheads = 8\n[train]\nbatch = 32\nmax_steps = 2\nout = \"runs/big\"\n"
	if err := os.WriteFile(filepath.Join(dir, "big.toml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := gptg(t, dir, "graph", "big.toml"); r.code != 0 {
		t.Fatalf("gptg graph big.toml without a process limit: exit %d: %s", r.code, r.stderr)
	}
	for _, args := range [][]string{{"graph", "big.toml"}, {"train", "big.toml"}, {"ablate", "big.toml", "--out", "ab"}} {
		r := runGptgWith(t, dir, runOptions{ulimit: "-v 2500000"}, args...)
		want := "more than this process may still use"
		if r.code != 2 || !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "ulimit -v 2500000 KiB") ||
			strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("gptg %s under ulimit -v 2500000: exit %d, stderr %q; want exit 2 and one line with %q",
				strings.Join(args, " "), r.code, r.stderr, want)
		}
	}
	for _, d := range []string{"runs/big", "ab"} {
		if _, err := os.Stat(filepath.Join(dir, d)); err == nil {
			t.Errorf("the refused training left %s", d)
		}
	}
}

// TestDataToyStreams: gptg data toy writes as it draws, in a few MiB
// whatever the size: built whole in memory, its largest file (10M
// sentences, 400 MB of text) would peak at 1 GB and crash a process
// limited below that. Here 3M sentences (120 MB) under ulimit -d 300 MB.
func TestDataToyStreams(t *testing.T) {
	dir := t.TempDir()
	r := runGptgWith(t, dir, runOptions{ulimit: "-d 300000"}, "data", "toy", "--out", "t.txt", "--sentences", "3000000")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("data toy of 3M sentences under ulimit -d 300000: exit %d, stderr %.300s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "wrote 3000000 sentences") {
		t.Errorf("stdout %q", r.stdout)
	}
	b, err := os.ReadFile(filepath.Join(dir, "t.txt"))
	if err != nil || bytes.Count(b, []byte("\n")) != 3_000_000 {
		t.Errorf("t.txt: %d lines (%v), want 3000000", bytes.Count(b, []byte("\n")), err)
	}
}

// TestHugeStrideTrains: data.stride near 2^63 overflowed the window count
// to zero, and the run was refused with "needs at least 331 tokens" for a
// corpus of 6000. It is one window a side.
func TestHugeStrideTrains(t *testing.T) {
	dir := t.TempDir()
	cfg := "[data]\npath = \"builtin:toy\"\ntokenizer = \"word\"\nstride = 9223372036854775807\n[model]\ncontext = 8\nembedding = 8\nblocks = 1\nheads = 2\n[train]\nbatch = 1\nmax_steps = 1\nout = \"runs/s\"\n"
	if err := os.WriteFile(filepath.Join(dir, "s.toml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	r := gptg(t, dir, "train", "s.toml", "--quiet")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "over 1 batches") {
		t.Errorf("want the test loss over the one test window; got %q", r.stdout)
	}
}

// TestCorpusCountsBounded: the first pass over a corpus holds what it
// counts: a word corpus's map of distinct words (6M distinct words take
// 573 MB, a gigabyte of them many gigabytes) and every kept sentence pair
// of a pairs file (94 MB of 3-word pairs take 2.55 GB; the 1 GiB a corpus
// may be, tens of gigabytes). Both stop at their bound (the vocabulary's,
// checked as the words come, not after the whole file), in bounded memory.
func TestCorpusCountsBounded(t *testing.T) {
	dir := t.TempDir()
	var words strings.Builder
	for i := range 4_000_000 {
		words.WriteString("w")
		words.WriteString(strconv.Itoa(i))
		words.WriteByte(' ')
	}
	files := map[string]string{
		"w.txt":  words.String(),
		"w.toml": "[data]\npath = \"w.txt\"\ntokenizer = \"word\"\n",
		"p.tsv":  strings.Repeat("a\tb\n", 5_000_000),
		"p.toml": "[data]\nformat = \"pairs\"\npath = \"p.tsv\"\n[model]\narch = \"encoder-decoder\"\nembedding = 8\nheads = 2\nblocks = 1\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		config, msg string
		code        int
		maxMB       int64
	}{
		{"w.toml", "text has more than 1048576 distinct words, the most a vocabulary (model.vocab) may have", 1, 250},
		{"p.toml", "p.tsv:2049126: the 2049126 pairs kept up to here take about 512 MiB of memory, more than the 512 MiB a pairs corpus may", 2, 1100},
	} {
		r := gptg(t, dir, "graph", c.config)
		if r.code != c.code || !strings.Contains(r.stderr, c.msg) {
			t.Errorf("graph %s: exit %d, stderr %q; want exit %d and %q", c.config, r.code, r.stderr, c.code, c.msg)
		}
		if r.maxRSSKB > c.maxMB<<10 {
			t.Errorf("graph %s: peak memory %d MiB, more than %d MiB", c.config, r.maxRSSKB>>10, c.maxMB)
		}
	}
}

// TestAttentionPictureBounded: a picture of more heatmap cells than gonum
// can draw in reasonable time is refused at once, naming how many tokens
// fit: a 4×4-head model over 256 tokens would draw for minutes and GBs
// (an imported GPT-2 over 1,024 tokens would need 275 GB).
func TestAttentionPictureBounded(t *testing.T) {
	dir := t.TempDir()
	config := fmt.Sprintf("[data]\npath = %q\n[model]\ncontext = 300\nembedding = 8\nblocks = 1\nheads = 1\n[train]\nbatch = 1\nmax_steps = 1\nout = \"run\"\n", testmodel.TinyText())
	if err := os.WriteFile(filepath.Join(dir, "c.toml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	ok(t, dir, "train", "c.toml", "--quiet")
	text, err := os.ReadFile(testmodel.TinyText())
	if err != nil || len(text) < 300 {
		t.Fatalf("corpus: %v", err)
	}
	// At once: gptg bounds the refusal's CPU time (commandCPU).
	r := gptg(t, dir, "attention", "run", "--text", string(text[:300]), "--out", "a.png")
	if r.code != 2 || !strings.Contains(r.stderr, "give a --text of at most 256 tokens") || exists(filepath.Join(dir, "a.png")) {
		t.Errorf("exit %d, a.png %v, stderr %s", r.code, exists(filepath.Join(dir, "a.png")), r.stderr)
	}
	if r := gptg(t, dir, "attention", "run", "--text", string(text[:256]), "--out", "a.svg"); r.code != 0 {
		t.Errorf("256 tokens as svg: exit %d, %s", r.code, r.stderr)
	}
}
