package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTranslationCommands trains a tiny encoder–decoder with gptg train
// and runs what a user runs on it: translate (greedy, beam, verbose),
// eval, inspect, graph; sample and a sentence of no words are refused
// with exit 2. The model is too small and short-trained to translate
// well: the test checks the commands, train's test (train/translate_test.go)
// checks the learning.
func TestTranslationCommands(t *testing.T) {
	dir := t.TempDir()
	var tsv strings.Builder
	for i := range 200 {
		fmt.Fprintf(&tsv, "a%d a%d a%d\tb%d b%d b%d\n", i%7, (i/7)%7, i%5, i%5, (i/7)%7, i%7)
	}
	if err := os.WriteFile(filepath.Join(dir, "toy.tsv"), []byte(tsv.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := `[data]
format = "pairs"
path = "toy.tsv"
max_source = 4
max_target = 4

[model]
arch = "encoder-decoder"
embedding = 8
heads = 2
encoder_blocks = 1
decoder_blocks = 1
ff_hidden = 16
norm = "pre"
positions = "learned"
tie_embeddings = true

[train]
batch = 8
max_steps = 20
out = "runs/toy"
`
	if err := os.WriteFile(filepath.Join(dir, "toy.toml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := ok(t, dir, "train", "toy.toml", "--quiet"); !strings.Contains(out, "done: 20 steps") {
		t.Fatalf("gptg train: %s", out)
	}
	run := filepath.Join(dir, "runs", "toy")
	contains := func(what, out string, wants ...string) {
		t.Helper()
		for _, w := range wants {
			if !strings.Contains(out, w) {
				t.Errorf("%s: no %q in:\n%s", what, w, out)
			}
		}
	}
	out := ok(t, dir, "translate", run, "--text", "a1 a2 a3", "--verbose")
	contains("translate --verbose", out, "# source: a1 a2 a3", "# log p: ")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 3 || !strings.HasPrefix(lines[2], "b") {
		t.Errorf("translate --verbose: want two comment lines and a translation in b-words, got:\n%s", out)
	}
	out = ok(t, dir, "translate", run, "--text", "a1 a2 zzz", "--beam", "3", "--verbose")
	contains("translate --beam 3", out, "# source: a1 a2 <unk>")
	// Without the cache: the same translations, to the digits printed.
	if nc := ok(t, dir, "translate", run, "--text", "a1 a2 zzz", "--beam", "3", "--verbose", "--no-cache"); nc != out {
		t.Errorf("translate --no-cache gave\n%s\nwith the cache:\n%s", nc, out)
	}
	contains("eval", ok(t, dir, "eval", run, "--show", "1"), "test loss ", "source:", "reference:", "greedy:", "BLEU = ")
	contains("inspect", ok(t, dir, "inspect", run), "arch: encoder-decoder", "tgt_tok.weight", "decoder.0.cross.q.weight")
	contains("graph", ok(t, dir, "graph", "toy.toml"), "encoder.0.att.q.weight", "graph nodes")
	for _, args := range [][]string{{"sample", run}, {"translate", run, "--text", "   "}, {"translate", run, "--text", "a1 a1 a1 a1 a1 a1"}} {
		r := gptg(t, dir, args...)
		if r.code != 2 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("gptg %s: exit %d, stderr %q; want exit 2 and one line", strings.Join(args, " "), r.code, r.stderr)
		}
	}
}
