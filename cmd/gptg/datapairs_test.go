package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gptg/gptg/pairs"
)

// pairsConfig is a translation config over the pairs file p.tsv.
const pairsConfig = "[data]\nformat = \"pairs\"\npath = \"p.tsv\"\nsplit = 0.5\n[model]\narch = \"encoder-decoder\"\nnorm = \"post\"\n"

// goodPairs is a pairs file that passes every check.
var goodPairs = strings.Repeat("a b\tc d\ne f\tg h\n", 10)

// pairsInputs are TestBadInputs' rows for translation corpora and configs.
func pairsInputs() []badInput {
	withPairs := func(tsv string) map[string]string { return map[string]string{"c.toml": pairsConfig, "p.tsv": tsv} }
	return []badInput{
		{name: "pairs: a line with no tab", files: withPairs(goodPairs + "one sentence alone\n"),
			args: []string{"data", "pairs", "c.toml"}, code: 2, msg: "p.tsv:21: no tab: each line is SOURCE<tab>TARGET (more tab-separated columns are ignored)"},
		{name: "pairs: an empty target", files: withPairs("a b\t \n" + goodPairs),
			args: []string{"data", "pairs", "c.toml"}, code: 2, msg: "p.tsv:1: the target sentence (after the first tab) is empty"},
		{name: "pairs: an empty source", files: withPairs(goodPairs + "\tc d\n"),
			args: []string{"data", "pairs", "c.toml"}, code: 2, msg: "p.tsv:21: the source sentence (before the first tab) is empty"},
		{name: "pairs: invalid UTF-8", files: withPairs(goodPairs + "caf\xe9\tcafé\n"),
			args: []string{"data", "pairs", "c.toml"}, code: 2, msg: "p.tsv:21: not valid UTF-8 (byte 0xe9 at column 4); a pairs file must be UTF-8 text"},
		{name: "pairs: a binary file", files: withPairs("\x7fELF\x02\x01\x01\x00\x00\x00\t\x00\x00"),
			args: []string{"data", "pairs", "c.toml"}, code: 2, msg: "p.tsv:1: a NUL byte at column 8: this looks like a binary file, not tab-separated text"},
		{name: "pairs: a line longer than the maximum", files: withPairs(goodPairs + strings.Repeat("x", 70000) + "\ty\n"),
			args: []string{"data", "pairs", "c.toml"}, code: 2, msg: "p.tsv:21: line is longer than 65536 bytes (a pairs file has one sentence pair per line)"},
		{name: "pairs: every pair filtered out", files: withPairs(goodPairs),
			args: []string{"data", "pairs", "c.toml", "--set", "data.min_source=3"}, code: 2,
			msg: "p.tsv: no pair passes the length filter (3..16 source words, at most 24 target words): 20 too short, 0 too long"},
		{name: "pairs: an empty file", files: withPairs(""),
			args: []string{"data", "pairs", "c.toml"}, code: 2, msg: "p.tsv: has no sentence pairs (expected lines of SOURCE<tab>TARGET)"},
		{name: "pairs: a text config", files: map[string]string{"c.toml": ""},
			args: []string{"data", "pairs", "c.toml"}, code: 2, msg: `c.toml: data.format is "text": gptg data pairs reads a translation config (data.format = "pairs")`},
		{name: "pairs: the decoder-only model", files: map[string]string{"c.toml": "[data]\nformat = \"pairs\"\n"},
			args: []string{"graph", "c.toml"}, code: 2, msg: `c.toml: model.arch: "decoder-only" cannot read a pairs corpus (data.format = "pairs"): set arch = "encoder-decoder"`},
		{name: "encoder-decoder with norm none", files: map[string]string{"c.toml": "[data]\nformat = \"pairs\"\n[model]\narch = \"encoder-decoder\"\nnorm = \"none\"\n"},
			args: []string{"graph", "c.toml"}, code: 2, msg: `c.toml: model.norm: "none" is not allowed with arch = "encoder-decoder" (allowed: post, the paper's; pre)`},
		// --force would replace a trained run's config.toml (its record:
		// resume and eval would then refuse the run).
		{name: "pairs: --out a training run's folder, --force", files: map[string]string{"c.toml": pairsConfig, "p.tsv": goodPairs,
			"run/model.safetensors": "a model", "run/config.toml": "# run id: 0\n"},
			args: []string{"data", "pairs", "c.toml", "--out", "run", "--force"}, code: 2, msg: "--out run is a training run's folder (it holds model.safetensors): data pairs would replace the run's config.toml; give another folder"},
		{name: "noam schedule without warmup", files: map[string]string{"c.toml": "[train]\nschedule = \"noam\"\nwarmup = 0\n"},
			args: []string{"train", "c.toml"}, code: 2, msg: `c.toml: train.warmup: 0 is invalid with schedule = "noam" (must be >= 1`},
	}
}

// TestDataPairs reads the built-in corpus with en-es.toml's settings.
func TestDataPairs(t *testing.T) {
	cfg, err := filepath.Abs("../../configs/translate/en-es.toml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out := ok(t, dir, "data", "pairs", cfg, "--out", "en-es")
	for _, want := range []string{
		"builtin:bible-en-es: 13099 lines, 13064 pairs kept (1..24 source words, at most 32 target words; 0 shorter, 35 longer left out)",
		"split 0.9 by a hash of the source sentence: 11791 training pairs, 1273 test pairs",
		"source 5193, target 6912",
		"369 training batches of 32 padded to source×target positions 25×33: 64% of the positions hold a word, SOS or EOS",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// The files a reference trainer reads give back the reader's ids.
	read := func(name string) []string {
		b, err := os.ReadFile(filepath.Join(dir, "en-es", name))
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	}
	src, err := pairs.NewVocab(read("src.vocab"))
	if err != nil {
		t.Fatal(err)
	}
	tgt, err := pairs.NewVocab(read("tgt.vocab"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := pairs.Load("builtin:bible-en-es", pairs.Options{Split: 0.9, MinCount: 2, MinSource: 1, MaxSource: 24, MaxTarget: 32})
	if err != nil {
		t.Fatal(err)
	}
	// batches.tsv is the run's batches in gptg train's order: 10 epochs of
	// 369, each epoch the batcher's plan for (seed 42, epoch).
	batches := read("batches.tsv")
	b := pairs.NewBatcher(c.Train, 32, 24, 32, 1)
	if batches[0] != "# shapes 25×33" || len(batches) != 1+3690 {
		t.Fatalf("batches.tsv: header %q, %d lines; want \"# shapes 25×33\" and 3691", batches[0], len(batches))
	}
	for _, step := range []int{0, 1, 368, 369, 2000, 3689} {
		plan := b.Epoch(42, step/369)[step%369]
		var idx []string
		for _, k := range plan.Pairs {
			idx = append(idx, strconv.Itoa(k))
		}
		if want := fmt.Sprintf("%d\t0\t%s", step+1, strings.Join(idx, " ")); batches[1+step] != want {
			t.Errorf("batches.tsv step %d: %.60q…, want %.60q…", step+1, batches[1+step], want)
		}
	}
	if !slices.Contains(read("config.toml"), `max_target = 32`) || !slices.Contains(read("config.toml"), `schedule = "noam"`) {
		t.Errorf("config.toml is not the resolved config:\n%s", strings.Join(read("config.toml"), "\n"))
	}
	for name, ps := range map[string][]pairs.Pair{"train.tsv": c.Train, "test.tsv": c.Test} {
		rows := read(name)
		if len(rows) != len(ps) {
			t.Fatalf("%s: %d rows, %d pairs", name, len(rows), len(ps))
		}
		for i, row := range rows {
			f := strings.Split(row, "\t")
			if len(f) != 5 || f[0] != strconv.Itoa(ps[i].Line) || f[4] != ps[i].TgtText ||
				!slices.Equal(src.Encode(strings.Fields(f[1])), ps[i].Src) || !slices.Equal(tgt.Encode(strings.Fields(f[2])), ps[i].Tgt) {
				t.Fatalf("%s row %d %q does not give pair %+v", name, i+1, row, ps[i])
			}
		}
	}
}
