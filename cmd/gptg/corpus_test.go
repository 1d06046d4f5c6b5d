package main

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gptg/gptg/corpus/builtin"
	"github.com/gptg/gptg/internal/testmodel"
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

// tinyProject is a config over a corpus file of the project, t.txt (the
// tiny text), small enough to train in a blink.
func tinyProject(t *testing.T) map[string]string {
	text, err := os.ReadFile(testmodel.TinyText())
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{
		"t.txt": string(text),
		"c.toml": "[data]\npath = \"t.txt\"\nstride = 4\n[model]\ncontext = 8\nembedding = 8\nblocks = 1\nheads = 2\n" +
			"[train]\nbatch = 2\nmax_steps = 10\nlog_every = 10\nwarmup = 2\n",
	}
}

// writeFiles writes name → content under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestEvalFromAnywhere: gptg eval and sample on a run folder give the same
// from the project folder and from anywhere else, after the project moved
// too; an edited corpus is refused with both digests.
func TestEvalFromAnywhere(t *testing.T) {
	proj := filepath.Join(t.TempDir(), "proj")
	files := tinyProject(t)
	writeFiles(t, proj, files)
	ok(t, proj, "train", "c.toml", "--quiet")
	want := ok(t, proj, "eval", "runs/c")
	sample := ok(t, proj, "sample", "runs/c", "--tokens", "20", "--temperature", "0")

	moved := filepath.Join(filepath.Dir(proj), "moved")
	if err := os.Rename(proj, moved); err != nil {
		t.Fatal(err)
	}
	elsewhere := t.TempDir()
	run := filepath.Join(moved, "runs", "c")
	// The same numbers; eval names the corpus it found, the moved one.
	got := ok(t, elsewhere, "eval", run)
	movedCorpus := filepath.Join(moved, "t.txt")
	if strings.ReplaceAll(got, " of "+movedCorpus+":", " of t.txt:") != want || !strings.Contains(want, " of t.txt:") {
		t.Errorf("gptg eval from elsewhere:\n%s\nfrom the project:\n%s\n(want the same, naming %s)", got, want, movedCorpus)
	}
	if got := ok(t, elsewhere, "sample", run, "--tokens", "20", "--temperature", "0"); got != sample {
		t.Errorf("gptg sample from elsewhere: %q, from the project: %q", got, sample)
	}
	// The project's corpus edited: refused, naming both digests.
	edited := "Edited. " + files["t.txt"]
	writeFiles(t, moved, map[string]string{"t.txt": edited})
	r := gptg(t, elsewhere, "eval", run)
	msg := fmt.Sprintf("it has sha256 %x, %d bytes, the run's has sha256 %x, %d bytes",
		sha256.Sum256([]byte(edited)), len(edited), sha256.Sum256([]byte(files["t.txt"])), len(files["t.txt"]))
	if r.code != 2 || !strings.Contains(r.stderr, msg) || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("gptg eval on an edited corpus: exit %d, %s\nwant exit 2 and one line with %q", r.code, r.stderr, msg)
	}
	// --data still evaluates the run on any corpus.
	if r := gptg(t, elsewhere, "eval", run, "--data", filepath.Join(moved, "t.txt")); r.code != 0 {
		t.Errorf("gptg eval --data: exit %d, %s", r.code, r.stderr)
	}
}

// TestDataListAndExport: gptg data list names every built-in corpus with
// its size and digest; gptg data export writes its very bytes.
func TestDataListAndExport(t *testing.T) {
	dir := t.TempDir()
	out := ok(t, dir, "data", "list")
	for _, c := range builtin.All() {
		if !strings.Contains(out, fmt.Sprintf("%s  ", c.Path())) || !strings.Contains(out, fmt.Sprintf("%d  ", c.Size)) || !strings.Contains(out, c.SHA256) {
			t.Errorf("gptg data list lacks %s (%d bytes, %s):\n%s", c.Path(), c.Size, c.SHA256, out)
		}
	}
	ok(t, dir, "data", "export", "tinyshakespeare", "--out", "sub/t.txt")
	ok(t, dir, "data", "export", "builtin:toy", "--out", "toy.txt")
	for name, file := range map[string]string{"tinyshakespeare": "sub/t.txt", "toy": "toy.txt"} {
		got, err := os.ReadFile(filepath.Join(dir, file))
		want, _ := builtin.Bytes(name)
		if err != nil || string(got) != string(want) {
			t.Errorf("exported %s: %d bytes, %v; want the %d built in", name, len(got), err, len(want))
		}
	}
}

// corpusInputs are the bad inputs about where the corpus is: built-in
// names, and run folders whose corpus moved or changed.
func corpusInputs(t *testing.T) []badInput {
	files := tinyProject(t)
	// trained trains c.toml into runs/c, then edits or removes t.txt.
	trained := func(edit func(text string) (string, bool)) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			ok(t, dir, "train", "c.toml", "--quiet", "--set", "train.max_steps=4", "--set", "train.checkpoint_every=2")
			path := filepath.Join(dir, "t.txt")
			if text, keep := edit(files["t.txt"]); keep {
				writeFiles(t, dir, map[string]string{"t.txt": text})
			} else if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}
	}
	edited := trained(func(text string) (string, bool) { return "Edited. " + text, true })
	gone := trained(func(string) (string, bool) { return "", false })
	return []badInput{
		{name: "eval: the run's corpus was edited", files: files, setup: edited,
			args: []string{"eval", "runs/c"}, code: 2, msg: "t.txt is not the corpus run runs/c was trained on: it has sha256 "},
		{name: "train --resume: the run's corpus was edited", files: files, setup: edited,
			args: []string{"train", "--resume", "runs/c", "--set", "train.max_steps=8"}, code: 2, msg: "t.txt is not the corpus run runs/c was trained on: it has sha256 "},
		{name: "eval: the run's corpus is gone", files: files, setup: gone,
			args: []string{"eval", "runs/c"}, code: 1, msg: "is not found: it is not at t.txt, runs/c/t.txt, nor under the folder of "},
		{name: "train: a misspelt built-in corpus", files: map[string]string{"c.toml": "[data]\npath = \"builtin:shakespeare\"\n"},
			args: []string{"train", "c.toml"}, code: 2, msg: `data.path: there is no built-in corpus "shakespeare" (built in: bible-en-es, tinyshakespeare, toy); did you mean "builtin:tinyshakespeare"?`},
		{name: "data export: an unknown built-in corpus", args: []string{"data", "export", "shakespeare", "--out", "x.txt"}, code: 2,
			msg: `there is no built-in corpus "shakespeare" (built in: `},
		{name: "data export without --out", args: []string{"data", "export", "toy"}, code: 2, msg: "data export needs --out FILE"},
		{name: "eval: an unknown built-in corpus", args: []string{"eval", causalModel, "--data", "builtin:nosuch"}, code: 1,
			msg: `there is no built-in corpus "nosuch" (built in: bible-en-es, tinyshakespeare, toy)`},
	}
}
