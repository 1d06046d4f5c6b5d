package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gptg/gptg/internal/toypairs"
)

// The small runs and files that the tests of several files build on.

// translationFiles are a tiny pairs corpus and an encoder–decoder config
// that trains on it in a fraction of a second (toy.toml → runs/toy).
func translationFiles() map[string]string {
	return map[string]string{
		"toy.tsv":  toypairs.Counted(200),
		"toy.toml": toypairs.Config("toy.tsv", "runs/toy", 5, "norm = \"pre\"\npositions = \"learned\"\n", ""),
	}
}

// translationRun trains toy.toml (translationFiles) into dir/runs/toy.
func translationRun(t *testing.T, dir string) {
	t.Helper()
	if r := gptg(t, dir, "train", "toy.toml", "--quiet"); r.code != 0 {
		t.Fatalf("training the translation fixture: exit %d: %s", r.code, r.stderr)
	}
}

// lmFiles is a word-level language-model config on the built-in toy corpus
// that trains in a fraction of a second into runs/lm.
func lmFiles() map[string]string {
	return map[string]string{"lm.toml": "[data]\npath = \"builtin:toy\"\ntokenizer = \"word\"\n[model]\ncontext = 8\nembedding = 8\nblocks = 1\nheads = 2\n[train]\nbatch = 4\nmax_steps = 2\nout = \"runs/lm\"\n"}
}

// lmRun writes lmFiles into dir and trains runs/lm.
func lmRun(t *testing.T, dir string) {
	t.Helper()
	for name, text := range lmFiles() {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if r := gptg(t, dir, "train", "lm.toml", "--quiet"); r.code != 0 {
		t.Fatalf("training the language-model fixture: exit %d: %s", r.code, r.stderr)
	}
}

func regular(t *testing.T, path string) {
	t.Helper()
	if info, err := os.Lstat(path); err != nil || !info.Mode().IsRegular() {
		t.Errorf("%s is not a regular file after the run (%v)", path, err)
	}
}
