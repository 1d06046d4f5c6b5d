package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gptg/gptg/internal/testmodel"
)

// The rows and tests of this file are about starting, continuing and
// replacing a run: train --init from a model of another kind, shape or
// vocabulary, --resume of a run whose files disagree, --force and
// --replacing, and a corpus found where the run left it.

func runInputs(t *testing.T) []badInput {
	tiny, err := os.ReadFile(testmodel.TinyText()) // the causal model's corpus
	if err != nil {
		t.Fatal(err)
	}
	half := string(tiny[:3000])
	modelVocab := len(runeSet(string(tiny)))
	if len(runeSet(half)) >= modelVocab {
		t.Fatalf("the first 3000 bytes of %s hold all its %d characters", testmodel.TinyText(), modelVocab)
	}
	lacks := fmt.Sprintf("--init: the corpus half.txt lacks %d of the %d char tokens of", modelVocab-len(runeSet(half)), modelVocab)
	initCfg := "[data]\npath = \"half.txt\"\n[train]\nout = \"r\"\n"

	return []badInput{
		{name: "train --init on a corpus missing some of the model's characters",
			files: map[string]string{"c.toml": initCfg, "half.txt": half},
			args:  []string{"train", "c.toml", "--init", causalModel}, code: 2, msg: lacks},
		{name: "train --init with model.vocab set to the model's, on a corpus missing some of its characters",
			files: map[string]string{"c.toml": initCfg, "half.txt": half},
			args:  []string{"train", "c.toml", "--init", causalModel, "--set", fmt.Sprintf("model.vocab=%d", modelVocab)}, code: 2, msg: lacks},
		// --init of the other kind of model, or on a translation corpus of
		// other words, says what differs and what to do.
		{name: "train --init a language model for a translation config", files: toyTranslation(),
			args: []string{"train", "toy.toml", "--init", causalModel}, code: 2,
			msg: "is a language model (decoder-only), and toy.toml describes a translation model (encoder-decoder): start from a model trained from a config like it"},
		{name: "train --init a translation model for a language-model config", files: lmFiles(), setup: writeTranslationModel,
			args: []string{"train", "lm.toml", "--init", translationModelFile}, code: 2,
			msg: "--init runs/tr/model.safetensors is a translation model (encoder-decoder), and lm.toml describes a language model (decoder-only)"},
		{name: "train --init a translation model on pairs of other words", files: toyTranslation(), setup: func(t *testing.T, dir string) {
			ok(t, dir, "train", "toy.toml", "--quiet")
			writeFiles(t, dir, map[string]string{"toy.tsv": strings.NewReplacer("a", "x").Replace(toyTranslation()["toy.tsv"])})
		}, args: []string{"train", "toy.toml", "--init", "runs/toy", "--set", "train.out=runs/t2"}, code: 2,
			msg: "toy.toml: --init: the source words of the corpus toy.tsv are not those of runs/toy/model.safetensors: it lacks "},
		{name: "train --init a translation model with other length limits", files: toyTranslation(),
			setup: func(t *testing.T, dir string) { ok(t, dir, "train", "toy.toml", "--quiet") },
			args:  []string{"train", "toy.toml", "--init", "runs/toy", "--set", "train.out=runs/t2", "--set", "data.max_source=30"}, code: 2,
			msg: "runs/toy/model.safetensors holds another model than this config describes: it has model.context=5 (trained with data.max_source = 4, data.max_target = 4)"},
		{name: "train --resume --force", args: []string{"train", "--resume", "runs/x", "--force"}, code: 2,
			msg: "--resume continues the run from its checkpoint and --force would start it over: give one of them"},
		{name: "train --resume: config.toml without its run id line (resumed over any checkpoint of the config)", setup: func(t *testing.T, dir string) {
			lmRun(t, dir)
			path := filepath.Join(dir, "runs/lm/config.toml")
			text, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			first, rest, _ := strings.Cut(string(text), "\n")
			if !strings.HasPrefix(first, "# run id: ") {
				t.Fatalf("config.toml starts %q, not with its run id", first)
			}
			if err := os.WriteFile(path, []byte(rest), 0o644); err != nil {
				t.Fatal(err)
			}
		}, args: []string{"train", "--resume", "runs/lm", "--set", "train.max_steps=4"}, code: 1,
			msg: "runs/lm/config.toml has no run id line, so nothing says that runs/lm/checkpoint.safetensors (of run "},
		{name: "train --replacing without --force", files: lmFiles(), args: []string{"train", "lm.toml", "--replacing", "-@0"}, code: 2,
			msg: "--replacing says which run --force may start over: give it with --force"},
		// ablate --force passes what it saw when it started, so that a
		// second ablation never retrains a run the first has just trained.
		{name: "train --force --replacing a run the folder no longer holds", setup: lmRun,
			args: []string{"train", "lm.toml", "--force", "--replacing", "-@0"}, code: 1,
			msg: "run folder runs/lm: another process has trained in the run folder since (it holds "},
	}
}

// runeSet is the set of characters of s.
func runeSet(s string) map[rune]bool {
	set := map[rune]bool{}
	for _, r := range s {
		set[r] = true
	}
	return set
}

// TestForceInitKeepsRun: train --force --init with a model of another
// kind or shape is refused before the old run's files are removed.
func TestForceInitKeepsRun(t *testing.T) {
	dir := t.TempDir()
	for name, text := range translationFiles() {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	translationRun(t, dir)
	cfg := "[data]\npath = \"builtin:toy\"\ntokenizer = \"word\"\n[model]\ncontext = 8\nembedding = 8\nblocks = 1\nheads = 2\n[train]\nbatch = 4\nmax_steps = 2\nout = \"runs/lm\"\n"
	if err := os.WriteFile(filepath.Join(dir, "lm.toml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := gptg(t, dir, "train", "lm.toml", "--quiet"); r.code != 0 {
		t.Fatalf("training: %s", r.stderr)
	}
	before := map[string][]byte{}
	for _, f := range []string{"model.safetensors", "metrics.jsonl", "config.toml", "checkpoint.safetensors"} {
		b, err := os.ReadFile(filepath.Join(dir, "runs/lm", f))
		if err != nil {
			t.Fatal(err)
		}
		before[f] = b
	}
	for _, init := range []string{"runs/toy", causalModel} {
		r := gptg(t, dir, "train", "lm.toml", "--force", "--init", init)
		if r.code == 0 || strings.Count(r.stderr, "\n") != 1 {
			t.Fatalf("--force --init %s: exit %d, stderr %q; want a one-line refusal", init, r.code, r.stderr)
		}
		for f, b := range before {
			if got, err := os.ReadFile(filepath.Join(dir, "runs/lm", f)); err != nil || !bytes.Equal(got, b) {
				t.Errorf("--force --init %s (refused: %s): runs/lm/%s was changed or removed", init, strings.TrimSpace(r.stderr), f)
			}
		}
	}
}

// TestCorpusBesideTheRunFolder: a corpus moved next to its runs
// (runs/tiny.txt for runs/c) is found there by eval and --resume, after
// every recorded place; when it is nowhere, the message says that place
// was looked at too.
func TestCorpusBesideTheRunFolder(t *testing.T) {
	dir := t.TempDir()
	copyFile(t, testmodel.TinyText(), filepath.Join(dir, "tiny.txt"))
	cfg := "[data]\npath = \"tiny.txt\"\n[model]\ncontext = 8\nembedding = 8\nblocks = 1\nheads = 2\n[train]\nbatch = 4\nmax_steps = 2\nout = \"runs/c\"\n"
	if err := os.WriteFile(filepath.Join(dir, "c.toml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := gptg(t, dir, "train", "c.toml", "--quiet"); r.code != 0 {
		t.Fatalf("train: exit %d: %s", r.code, r.stderr)
	}
	if err := os.Rename(filepath.Join(dir, "tiny.txt"), filepath.Join(dir, "runs", "tiny.txt")); err != nil {
		t.Fatal(err)
	}
	if r := gptg(t, dir, "eval", "runs/c"); r.code != 0 || !strings.Contains(r.stdout, "of runs/tiny.txt") {
		t.Errorf("eval with the corpus beside the run folder: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	away := filepath.Join(t.TempDir(), "tiny.txt")
	if err := os.Rename(filepath.Join(dir, "runs", "tiny.txt"), away); err != nil {
		t.Fatal(err)
	}
	want := "nor by its name beside or in the run folder (runs/tiny.txt)"
	if r := gptg(t, dir, "eval", "runs/c"); r.code != 1 || !strings.Contains(r.stderr, want) {
		t.Errorf("eval without the corpus: exit %d, stderr %q; want exit 1 and %q", r.code, r.stderr, want)
	}
	if err := os.Rename(away, filepath.Join(dir, "runs", "tiny.txt")); err != nil {
		t.Fatal(err)
	}
	if r := gptg(t, dir, "train", "--resume", "runs/c", "--set", "train.max_steps=3", "--quiet"); r.code != 0 {
		t.Errorf("--resume with the corpus beside the run folder: exit %d, stderr %q", r.code, r.stderr)
	}
}

// runID is the run id line's id of the run folder dir's config.toml.
func runID(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "config.toml"))
	rest, ok := strings.CutPrefix(string(b), "# run id: ")
	id, _, _ := strings.Cut(rest, " ")
	if err != nil || !ok || id == "" {
		t.Fatalf("%s/config.toml: no run id line (%v)", dir, err)
	}
	return id
}

// TestTrainTwiceSaysNothingBeforeTheRefusal: the first gptg train of a
// config says "training … into"; the same command again is refused (exit
// 2, pointing at --resume) without saying it would train, as is a
// train.out that is not a run folder.
func TestTrainTwiceSaysNothingBeforeTheRefusal(t *testing.T) {
	dir := t.TempDir()
	cfg := "[data]\npath = \"builtin:toy\"\ntokenizer = \"word\"\n[model]\ncontext = 8\nembedding = 8\nblocks = 1\nheads = 2\n[train]\nbatch = 4\nmax_steps = 2\nout = \"runs/lm\"\n"
	if err := os.WriteFile(filepath.Join(dir, "lm.toml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "notes"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes", "todo.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := gptg(t, dir, "train", "lm.toml")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "training lm.toml into runs/lm\n") {
		t.Fatalf("first run: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"train", "lm.toml"}, "already holds a finished run (2 steps): train it longer with `gptg train --resume runs/lm"},
		{[]string{"train", "lm.toml", "--set", "train.out=notes"}, "notes is a folder that is not a gptg run folder"},
	} {
		r := gptg(t, dir, c.args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.msg) || strings.Contains(r.stdout, "training") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2, %q, and no \"training\"", c.args, r.code, r.stdout, r.stderr, c.msg)
		}
	}
}
