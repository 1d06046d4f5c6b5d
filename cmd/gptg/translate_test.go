package main

import (
	"fmt"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/internal/testmodel"
	"github.com/gptg/gptg/internal/toypairs"
	"github.com/gptg/gptg/pairs"
	"github.com/gptg/gptg/translate"
)

// TestTranslationCommands trains a tiny encoder–decoder with gptg train
// and runs what a user runs on it: translate (greedy, beam, verbose),
// eval, inspect, graph; sample and a sentence of no words are refused
// with exit 2. The model is too small and short-trained to translate
// well: the test checks the commands, train's test (train/translate_test.go)
// checks the learning.
func TestTranslationCommands(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, toyTranslation())
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
	checkTranslationAttention(t, dir, run)
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

// toyTranslation is a pairs file and a config that trains a tiny
// encoder–decoder on it in a second (20 steps into runs/toy).
func toyTranslation() map[string]string {
	return map[string]string{
		"toy.tsv":  toypairs.Counted(200),
		"toy.toml": toypairs.Config("toy.tsv", "runs/toy", 20, "norm = \"pre\"\npositions = \"learned\"\ntie_embeddings = true\n", ""),
	}
}

// checkTranslationAttention runs gptg attention on a translation run and
// compares every number it prints with the weights of the model's graph
// (translate.Translator.Attention, whose test compares them with a padded
// batch's), for the model's own translation and a given target; the PNG
// of a given target must decode.
func checkTranslationAttention(t *testing.T, dir, run string) {
	t.Helper()
	m, err := translate.Load(filepath.Join(run, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	tr := translate.NewTranslator(m, graph.Backend{})
	for _, target := range []string{"", "b2 b0 b1"} {
		args := []string{"attention", run, "--text", "a1 a2 a0", "--format", "text"}
		if target != "" {
			args = append(args, "--target", target)
		}
		out := ok(t, dir, args...)
		a, err := tr.Attention("a1 a2 a0", target)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]matrix{}
		for b := range a.Encoder {
			for h := range a.Encoder[b] {
				want[fmt.Sprintf("encoder block %d, head %d", b, h)] = a.Encoder[b][h]
			}
		}
		for b := range a.Decoder {
			for h := range a.Decoder[b] {
				want[fmt.Sprintf("decoder block %d, head %d: self", b, h)] = a.Decoder[b][h]
				want[fmt.Sprintf("decoder block %d, head %d: cross", b, h)] = a.Cross[b][h]
			}
		}
		tables := strings.Split(out, "\n\n")[1:] // after the source and target lines
		if len(tables) < len(want) {
			t.Fatalf("gptg %s printed %d tables, want %d:\n%s", strings.Join(args, " "), len(tables), len(want), out)
		}
		seen := 0
		for _, tab := range tables {
			lines := strings.Split(strings.TrimSpace(tab), "\n")
			if len(lines) < 3 {
				continue
			}
			title, _, _ := strings.Cut(lines[0], " (rows:")
			mat, found := want[title]
			if !found {
				t.Fatalf("unexpected table %q", lines[0])
			}
			seen++
			if rows := len(lines) - 2; rows != mat.N {
				t.Fatalf("%s: %d rows printed, the graph has %d", title, rows, mat.N)
			}
			for i, line := range lines[2:] {
				f := strings.Fields(line)
				cells := f[len(f)-mat.Cols():]
				for j, c := range cells {
					x, err := strconv.ParseFloat(c, 64)
					if err != nil || math.Abs(x-mat.At(i, j)) > 0.0005 {
						t.Fatalf("%s (%d, %d): printed %q, the graph's weight %.6f", title, i, j, c, mat.At(i, j))
					}
				}
			}
		}
		if seen != len(want) {
			t.Errorf("%d of %d maps printed", seen, len(want))
		}
		if target != "" && !strings.Contains(out, "target (given): b2 b0 b1") {
			t.Errorf("no given target in:\n%.300s", out)
		}
	}
	ok(t, dir, "attention", run, "--text", "a1 a2 a0", "--target", "b2 b0 b1", "--out", "align.png")
	f, err := os.Open(filepath.Join(dir, "align.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	// Three rows of maps (encoder, decoder self, cross) by two heads.
	if b := img.Bounds(); b.Dx() < 400 || b.Dy() < 600 {
		t.Errorf("align.png is %v; want room for 3×2 heatmaps", b)
	}
}

// translationModelFile is where translationInputs' setup writes a
// translation model (random weights): sources of at most 4 words.
const translationModelFile = "runs/tr/model.safetensors"

// writeTranslationModel writes a small encoder–decoder of random weights,
// learned positions (6 rows), to dir/translationModelFile.
func writeTranslationModel(t *testing.T, dir string) {
	t.Helper()
	writeTranslationModelPositions(t, dir, "learned")
}

// writeTranslationModelPositions is writeTranslationModel with learned or
// sinusoidal positions.
func writeTranslationModelPositions(t *testing.T, dir, positions string) {
	t.Helper()
	mc := config.DefaultModel()
	mc.Arch, mc.Embedding, mc.Heads, mc.Blocks = config.ArchEncoderDecoder, 8, 2, 1
	mc.EncoderBlocks, mc.DecoderBlocks, mc.FFHidden = 1, 1, 16
	mc.Norm, mc.Positions, mc.Context = "post", positions, 6
	vocab := func(prefix string) *pairs.Vocab {
		words := append([]string(nil), pairs.Specials...)
		for i := range 6 {
			words = append(words, fmt.Sprintf("%s%d", prefix, i))
		}
		v, err := pairs.NewVocab(words)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	src, tgt := vocab("a"), vocab("b")
	g, err := graph.BuildTranslation(translate.Spec(mc, src.Size(), tgt.Size()), graph.TranslationOptions{Batch: 1, SrcLen: 2, TgtLen: 2, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, translationModelFile)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := translate.Save(path, mc, src, tgt, 4, 4, g.Params); err != nil {
		t.Fatal(err)
	}
}

// translationInputs are TestBadInputs' rows for translate and attention
// on translation models.
func translationInputs(languageModel string) []badInput {
	tm := translationModelFile
	with := writeTranslationModel
	sinusoidal := func(t *testing.T, dir string) { writeTranslationModelPositions(t, dir, "sinusoidal") }
	return []badInput{
		{name: "translate: no model", args: []string{"translate"}, code: 2,
			msg: "translate needs exactly one MODEL file or run folder, got 0"},
		{name: "translate: beam 0", setup: with, args: []string{"translate", tm, "--text", "a1", "--beam", "0"}, code: 2,
			msg: "--beam 0: give a beam width from 1 to 64"},
		{name: "translate: negative length penalty", setup: with, args: []string{"translate", tm, "--text", "a1", "--alpha", "-1"}, code: 2,
			msg: "--alpha -1: give a length penalty exponent from 0 to 10"},
		{name: "translate: a sentence of no words", setup: with, args: []string{"translate", tm, "--text", "   "}, code: 2,
			msg: "cannot translate: the sentence has no words"},
		{name: "translate: a sentence longer than the positions", setup: with, args: []string{"translate", tm, "--text", "a1 a2 a3 a4 a5 a1"}, code: 2,
			msg: "cannot translate: the sentence has 6 words; this model (learned positions) reads at most 5"},
		{name: "translate: a language model", args: []string{"translate", languageModel, "--text", "a1"}, code: 2,
			msg: "is a language model (decoder-only), and translate needs a translation model (encoder-decoder)"},
		{name: "attention: --target on a language model", args: []string{"attention", languageModel, "--text", "ab", "--target", "b1"}, code: 2,
			msg: "--target is for translation models"},
		{name: "attention: an empty --target", setup: with, args: []string{"attention", tm, "--text", "a1", "--target", " "}, code: 2,
			msg: "--target is empty; leave it out to see the model's own translation"},
		{name: "attention: a target longer than the decoder", setup: with, args: []string{"attention", tm, "--text", "a1", "--target", "b1 b2 b3 b4 b5"}, code: 2,
			msg: "cannot translate: the target has 5 words; this model writes at most 4"},
		{name: "attention: a translation source of no words", setup: with, args: []string{"attention", tm, "--text", "  "}, code: 2,
			msg: "cannot translate: the sentence has no words"},
		// Sinusoidal positions read a sentence of any length; the encoder's
		// attention maps grow as its square.
		{name: "translate: a sentence whose graphs need more than the memory limit", setup: sinusoidal,
			args: []string{"translate", tm, "--text", strings.Repeat("a1 a2 a3 ", 10000)}, code: 2,
			msg: "cannot translate: translating a sentence of 30000 words with runs/tr/model.safetensors needs about"},
		{name: "attention: a sentence whose graphs need more than the memory limit", setup: sinusoidal,
			args: []string{"attention", tm, "--text", strings.Repeat("a1 a2 a3 ", 10000)}, code: 2,
			msg: "cannot translate: drawing the attention of a sentence of 30000 words with runs/tr/model.safetensors needs about"},
		// A translation run records its pairs file's sha256 and size.
		{name: "eval: a translation run's pairs file was edited", files: toyTranslation(), setup: editedPairs,
			args: []string{"eval", "runs/toy"}, code: 2, msg: "toy.tsv is not the corpus run runs/toy was trained on: it has sha256 "},
		{name: "train --resume: a translation run's pairs file was edited", files: toyTranslation(), setup: editedPairs,
			args: []string{"train", "--resume", "runs/toy", "--set", "train.max_steps=40"}, code: 2,
			msg: "toy.tsv is not the corpus run runs/toy was trained on: it has sha256 "},
	}
}

// editedPairs trains the toy translation run, then edits one line of its
// pairs file.
func editedPairs(t *testing.T, dir string) {
	ok(t, dir, "train", "toy.toml", "--quiet")
	path := filepath.Join(dir, "toy.tsv")
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(text), "a0", "a6", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// translationFlagInputs are flags and inputs the translation commands
// cannot honour: eval's flags of a language model, a config setting an
// encoder–decoder does not use, a sentence that is not UTF-8.
func translationFlagInputs(t *testing.T) []badInput {
	tr := translationFiles()
	return []badInput{
		{name: "eval a translation run with --data", files: tr, setup: translationRun,
			args: []string{"eval", "runs/toy", "--data", testmodel.TinyText()}, code: 2, msg: "--data is for language models: a translation model is evaluated on its run's test pairs"},
		{name: "eval a translation run with --prefix-only", files: tr, setup: translationRun,
			args: []string{"eval", "runs/toy", "--prefix-only"}, code: 2, msg: "--prefix-only is for language models"},
		{name: "eval a language model with --show", args: []string{"eval", causalModel, "--show", "2"}, code: 2, msg: "--show is for translation models"},
		{name: "eval --show -1", args: []string{"eval", causalModel, "--show", "-1"}, code: 2, msg: "--show -1 must be between 0 and 1000000"},
		{name: "translation config: data.sampling = \"random\", which an encoder–decoder does not use", files: map[string]string{"toy.toml": strings.Replace(tr["toy.toml"], "max_target = 4", "max_target = 4\nsampling = \"random\"", 1)},
			args: []string{"graph", "toy.toml"}, code: 2, msg: `data.sampling: "random" is for a text corpus`},
		{name: "translate: a sentence that is not UTF-8", files: tr, setup: translationRun,
			args: []string{"translate", "runs/toy", "--text", "a1 \xff"}, code: 2, msg: "the sentence is not valid UTF-8 (byte 0xff at offset 3)"},
	}
}

// TestTranslateLongStdinLine: a line of standard input past 1 MiB is bad
// input naming its line (exit 2), like a sentence too long for the model,
// not exit 1 "bufio.Scanner: token too long".
func TestTranslateLongStdinLine(t *testing.T) {
	dir := t.TempDir()
	writeTranslationModel(t, dir)
	if err := os.WriteFile(filepath.Join(dir, "in.txt"), []byte("a1 a2\n"+strings.Repeat("a1 ", 700_000)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runGptgWith(t, dir, runOptions{stdin: "in.txt"}, "translate", translationModelFile)
	want := "gptg translate: stdin:2: the line is longer than 1 MiB, more than any sentence the model reads"
	if r.code != 2 || !strings.HasPrefix(r.stderr, want) || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("exit %d, stderr %q; want exit 2 and one line %q", r.code, r.stderr, want)
	}
	if strings.Count(r.stdout, "\n") != 1 {
		t.Errorf("stdout %q: want the first line's translation", r.stdout)
	}
}
