package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigsWorkAnywhere: every config of the repository finds its corpus
// from a folder outside it, with no data/ folder and no network (the
// built-in corpora); the README's first command trains.
func TestConfigsWorkAnywhere(t *testing.T) {
	configs, err := filepath.Glob("../../configs/*.toml")
	if err != nil {
		t.Fatal(err)
	}
	more, _ := filepath.Glob("../../configs/*/*.toml")
	for _, c := range append(configs, more...) {
		if strings.Contains(c, "/sweeps/") { // not a training config
			continue
		}
		if strings.Contains(c, "/translate/") {
			// The encoder-decoder's configs: `gptg graph` builds the
			// decoder-only model; the translation commands (#21) test them.
			continue
		}
		abs, err := filepath.Abs(c)
		if err != nil {
			t.Fatal(err)
		}
		// graph reads the corpus for the vocabulary (a model with 65
		// characters' or 31 words' embeddings) and builds the model.
		out := ok(t, t.TempDir(), "graph", abs)
		if !strings.Contains(out, "tok.weight") {
			t.Errorf("gptg graph %s printed no token embedding:\n%s", c, out)
		}
	}
	for _, c := range []string{"shakespeare.toml", "toy-words.toml"} {
		abs, _ := filepath.Abs(filepath.Join("../../configs", c))
		dir := t.TempDir()
		out := ok(t, dir, "train", abs, "--set", "train.max_steps=2", "--set", "train.eval_batches=1", "--quiet")
		run := filepath.Join(dir, "runs", strings.TrimSuffix(c, ".toml"))
		if !strings.Contains(out, "done: 2 steps") {
			t.Errorf("gptg train %s: %s", c, out)
		}
		if _, err := os.Stat(filepath.Join(run, "model.safetensors")); err != nil {
			t.Error(err)
		}
	}
}

// corpusInputs are the bad inputs about where the corpus is: built-in
// names, and run folders whose corpus moved or changed.
func corpusInputs(t *testing.T) []badInput {
	return []badInput{
		{name: "train: a misspelt built-in corpus", files: map[string]string{"c.toml": "[data]\npath = \"builtin:shakespeare\"\n"},
			args: []string{"train", "c.toml"}, code: 2, msg: `data.path: there is no built-in corpus "shakespeare" (built in: bible-en-es, tinyshakespeare, toy); did you mean "builtin:tinyshakespeare"?`},
		{name: "eval: an unknown built-in corpus", args: []string{"eval", causalModel, "--data", "builtin:nosuch"}, code: 1,
			msg: `there is no built-in corpus "nosuch" (built in: bible-en-es, tinyshakespeare, toy)`},
	}
}
