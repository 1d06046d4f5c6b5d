package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gptg/gptg/modelfile"
)

// The rows and tests of this file are the fifth round of hostile input
// (issue #24; the probes are testdata/hostile/probe.py): exit codes made
// one rule — a wrong argument (a missing path, a file of another kind, a
// model of the wrong kind, a folder output that is a file or the root) is
// exit 2 for every command —, translation models whose tokenizer metadata
// was damaged, and outputs that reached the filesystem root.

// translationMeta writes the translation run's model as dir/name with its
// metadata key replaced by change(old value).
func translationMeta(name, key string, change func(string) string) func(t *testing.T, dir string) {
	return func(t *testing.T, dir string) {
		translationRun(t, dir)
		f, err := modelfile.Read(filepath.Join(dir, "runs/toy/model.safetensors"), modelfile.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		f.Meta[key] = change(f.Meta[key])
		var tensors []modelfile.Tensor
		for _, w := range f.Tensors {
			tensors = append(tensors, w)
		}
		if err := modelfile.Write(filepath.Join(dir, name), tensors, f.Meta); err != nil {
			t.Fatal(err)
		}
	}
}

// translationWords is translationMeta of a vocabulary's word list.
func translationWords(name, key string, change func([]string) []string) func(t *testing.T, dir string) {
	return translationMeta(name, key, func(v string) string {
		var words []string
		if err := json.Unmarshal([]byte(v), &words); err != nil {
			panic(err)
		}
		b, _ := json.Marshal(change(words))
		return string(b)
	})
}

// translationModelEdit writes the model with its embedding set to e in the
// metadata only.
func translationModelField(name, field string, value any) func(t *testing.T, dir string) {
	return translationMeta(name, "model", func(v string) string {
		var m map[string]any
		if err := json.Unmarshal([]byte(v), &m); err != nil {
			panic(err)
		}
		m[field] = value
		b, _ := json.Marshal(m)
		return string(b)
	})
}

// notUTF8 rewrites the first occurrence of old in dir/src's header (same
// length) as bytes that are not UTF-8, into dir/dst.
func notUTF8(src, dst, old string) func(t *testing.T, dir string) {
	return func(t *testing.T, dir string) {
		if !filepath.IsAbs(src) {
			src = filepath.Join(dir, src)
		}
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		i := bytes.Index(b, []byte(old))
		if i < 0 {
			t.Fatalf("%q not in %s", old, src)
		}
		bad := bytes.Repeat([]byte{0xff}, len(old))
		b = append(append(append([]byte(nil), b[:i]...), bad...), b[i+len(old):]...)
		if err := os.WriteFile(filepath.Join(dir, dst), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func round5Inputs(t *testing.T) []badInput {
	tr := translationFiles()
	withRun := func(t *testing.T, dir string) { translationRun(t, dir) }
	return []badInput{
		// One rule for exit codes: a wrong argument is exit 2.
		{name: "sample: a missing model", args: []string{"sample", "nope"}, code: 2, msg: "nope: no such model file or run folder"},
		{name: "translate: a missing model", args: []string{"translate", "nope", "--text", "a"}, code: 2, msg: "nope: no such model file or run folder"},
		{name: "attention: a corpus instead of a model", args: []string{"attention", "t.txt", "--text", "Fi"}, files: map[string]string{"t.txt": "First Citizen:\nBefore we proceed\n"},
			code: 2, msg: "t.txt is a text file, not a model file"},
		{name: "inspect: a nanoGPT checkpoint instead of a model", setup: nanoCheckpoint, args: []string{"inspect", "ckpt.pt"}, code: 2, msg: "ckpt.pt is a zip archive"},
		{name: "eval /dev/null as the model", args: []string{"eval", "/dev/null", "--data", "x.txt"}, code: 2, msg: "/dev/null is a character device, not a model file"},
		{name: "train --init a missing model", files: map[string]string{"c.toml": "[data]\npath = \"builtin:toy\"\ntokenizer = \"word\"\n"},
			args: []string{"train", "c.toml", "--init", "nope"}, code: 2, msg: "nope: no such model file or run folder"},
		{name: "train --resume a folder that is no run", files: map[string]string{"d/x.txt": ""},
			args: []string{"train", "--resume", "d"}, code: 2, msg: "--resume d: it has no config.toml, so it is not a run folder"},
		{name: "ablate --out a file", files: map[string]string{"c.toml": "", "notes.txt": "mine\n"},
			args: []string{"ablate", "c.toml", "--out", "notes.txt"}, code: 2, msg: "--out notes.txt: exists and is not a folder"},
		{name: "ablate --out /", files: map[string]string{"c.toml": ""},
			args: []string{"ablate", "c.toml", "--out", "/"}, code: 2, msg: "--out /: is the filesystem root"},
		{name: "ablate --out a run folder", files: map[string]string{"c.toml": "", "run/config.toml": ""},
			args: []string{"ablate", "c.toml", "--out", "run"}, code: 2, msg: "--out run: is a run folder (it holds config.toml)"},
		{name: "ablate --set train.out", files: map[string]string{"c.toml": ""},
			args: []string{"ablate", "c.toml", "--set", "train.out=/tmp/elsewhere"}, code: 2, msg: "train.out cannot be set"},
		{name: "sweep: [set] train.out", files: map[string]string{"c.toml": "", "s.toml": "configs = [\"c.toml\"]\nout = \"sw\"\n[set]\n\"train.out\" = \"/tmp/elsewhere\"\n"},
			args: []string{"sweep", "s.toml"}, code: 2, msg: "train.out cannot be set"},
		{name: "plot a model file", args: []string{"plot", causalModel}, code: 2, msg: "is a file, not a run folder: give its folder"},
		{name: "serve --addr without a port number", args: []string{"serve", ".", "--addr", "localhost:http"}, code: 2, msg: "the port \"http\" is not a number"},
		{name: "import: a missing checkpoint", setup: nanoMeta, args: []string{"import", "nanogpt", "nope.pt", "--meta", "meta.pkl", "--out", "m.safetensors"},
			code: 2, msg: "nope.pt: no such file"},
		{name: "data toy --out a path through a file", files: map[string]string{"f.txt": "x"},
			args: []string{"data", "toy", "--out", "f.txt/t.txt"}, code: 2, msg: "a part of its path before the file name is a file"},
		{name: "data toy --out ending in /", args: []string{"data", "toy", "--out", "new/"}, code: 2, msg: "--out new/: ends in /"},
		{name: "graph a model file as its config", setup: func(t *testing.T, dir string) { copyFile(t, causalModel, filepath.Join(dir, "m.safetensors")) },
			args: []string{"graph", "m.safetensors"}, code: 2, msg: "is a safetensors model file (give it to sample, eval or inspect), not a TOML config"},

		// A meta.pkl whose parts disagree: the imported model would decode
		// its tokens to other characters than nanoGPT does.
		{name: "import: meta.pkl's vocab_size is not its itos's size", setup: func(t *testing.T, dir string) {
			nanoCheckpoint(t, dir)
			editMeta(t, dir, func(b []byte) []byte { return bytes.Replace(b, []byte("I55\n"), []byte("I56\n"), 1) })
		}, args: []string{"import", "nanogpt", "ckpt.pt", "--out", "m.safetensors"}, code: 2, msg: "meta.pkl: vocab_size is 56, but itos holds 55 characters"},
		{name: "import: meta.pkl's stoi is not the inverse of itos", setup: func(t *testing.T, dir string) {
			nanoCheckpoint(t, dir)
			editMeta(t, dir, func(b []byte) []byte {
				i := bytes.Index(b, []byte("Vstoi\n"))
				j := i + bytes.Index(b[i:], []byte("I0\n"))
				return append(append(append([]byte(nil), b[:j]...), "I1\n"...), b[j+3:]...)
			})
		}, args: []string{"import", "nanogpt", "ckpt.pt", "--out", "m.safetensors"}, code: 2, msg: "meta.pkl: stoi is not the inverse of itos (it maps \"\\n\" to 1, itos does not)"},

		{name: "translation config: data.sampling = \"random\" (silently ignored before)", files: map[string]string{"toy.toml": strings.Replace(tr["toy.toml"], "max_target = 4", "max_target = 4\nsampling = \"random\"", 1)},
			args: []string{"graph", "toy.toml"}, code: 2, msg: `data.sampling: "random" is for a text corpus`},

		// Damaged tokenizer metadata of translation models: refused, never
		// a translation with its words shifted.
		{name: "translate: a source word the tokenizer never makes", files: tr, setup: translationWords("t.safetensors", "src_vocab", func(w []string) []string {
			return append(append([]string{}, w[:4]...), append([]string{"A1"}, w[5:]...)...)
		}), args: []string{"translate", "t.safetensors", "--text", "a1 a2"}, code: 1, msg: `metadata "src_vocab": word 4, "A1", is not one the tokenizer makes`},
		{name: "translate: a target word holding a space", files: tr, setup: translationWords("t.safetensors", "tgt_vocab", func(w []string) []string {
			return append(append([]string{}, w[:4]...), append([]string{"b1 b2"}, w[5:]...)...)
		}), args: []string{"translate", "t.safetensors", "--text", "a1 a2"}, code: 1, msg: `metadata "tgt_vocab": word 4, "b1 b2", is not one the tokenizer makes`},
		{name: "translate: a vocabulary holding bytes that are not UTF-8", files: tr, setup: func(t *testing.T, dir string) {
			withRun(t, dir)
			notUTF8("runs/toy/model.safetensors", "t.safetensors", `a1\"`)(t, dir)
		}, args: []string{"translate", "t.safetensors", "--text", "a1 a2"}, code: 1, msg: "header is not valid UTF-8"},
		{name: "translate: tokenizer char in a translation model", files: tr, setup: translationMeta("t.safetensors", "tokenizer", func(string) string { return "char" }),
			args: []string{"translate", "t.safetensors", "--text", "a1"}, code: 1, msg: `metadata "tokenizer": "char": a translation model's vocabularies are of words`},
		{name: "translate: max_target past the model's positions", files: tr, setup: translationMeta("t.safetensors", "max_target", func(string) string { return "100" }),
			args: []string{"translate", "t.safetensors", "--text", "a1"}, code: 1, msg: `metadata "max_target": 100 words and EOS do not fit the model's 5 positions`},
		{name: "translate: metadata of embedding 1000000", files: tr, setup: translationModelField("t.safetensors", "embedding", 1000000),
			args: []string{"translate", "t.safetensors", "--text", "a1"}, code: 1, maxMB: 300, msg: "model.embedding: 1000000 is out of range"},
		{name: "translate: metadata of embedding 16 over tensors of 8", files: tr, setup: translationModelField("t.safetensors", "embedding", 16),
			args: []string{"translate", "t.safetensors", "--text", "a1"}, code: 1, msg: "has shape [16 8], the metadata's model needs [16 16]"},
		{name: "translate: a sentence that is not UTF-8", files: tr, setup: withRun,
			args: []string{"translate", "runs/toy", "--text", "a1 \xff"}, code: 2, msg: "the sentence is not valid UTF-8 (byte 0xff at offset 3)"},
		{name: "sample: a char vocabulary holding bytes that are not UTF-8", setup: func(t *testing.T, dir string) {
			notUTF8(causalModel, "m.safetensors", `\"a\"`)(t, dir)
		}, args: []string{"sample", "m.safetensors"}, code: 1, msg: "header is not valid UTF-8"},
	}
}

// TestWrongArgumentExitCodes is the exit-code rule over every command that
// takes a model, a config or a run folder: given anything of another kind,
// or nothing that exists, each exits 2 with one line.
func TestWrongArgumentExitCodes(t *testing.T) {
	dir := t.TempDir()
	for name, text := range translationFiles() {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	translationRun(t, dir)
	copyFile(t, causalModel, filepath.Join(dir, "m.safetensors"))
	nanoCheckpoint(t, dir)
	if err := os.WriteFile(filepath.Join(dir, "c.toml"), []byte("[data]\npath = \"toy.tsv\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	lm := filepath.Dir(causalModel)
	wrong := map[string]string{"a config": "c.toml", "a corpus": "toy.tsv", "a folder without a model": "empty",
		"a missing path": "nope", "a device": "/dev/null", "a nanoGPT checkpoint": "ckpt.pt"}
	commands := map[string]func(arg string) []string{
		"sample":     func(a string) []string { return []string{"sample", a, "--tokens", "2"} },
		"attention":  func(a string) []string { return []string{"attention", a, "--text", "Fi"} },
		"inspect":    func(a string) []string { return []string{"inspect", a} },
		"translate":  func(a string) []string { return []string{"translate", a, "--text", "a1"} },
		"eval":       func(a string) []string { return []string{"eval", a, "--data", "toy.tsv"} },
		"train init": func(a string) []string { return []string{"train", "toy.toml", "--set", "train.out=new", "--init", a} },
		"plot":       func(a string) []string { return []string{"plot", a} },
		"tokens":     func(a string) []string { return []string{"tokens", a, "x"} },
	}
	check := func(args []string, msg string) {
		t.Helper()
		r := gptg(t, dir, args...)
		if r.code != 2 || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, msg) {
			t.Errorf("gptg %q: exit %d, stderr %q; want exit 2 and one line holding %q", args, r.code, r.stderr, msg)
		}
	}
	for cmd, args := range commands {
		for what, arg := range wrong {
			if cmd == "plot" && what == "a folder without a model" {
				continue // a run folder needs no model to be plotted
			}
			t.Run(cmd+" given "+what, func(t *testing.T) { check(args(arg), "") })
		}
	}
	// A model of the other kind.
	check([]string{"sample", "runs/toy"}, "is a translation model")
	check([]string{"translate", lm}, "is a language model")
	check([]string{"translate", "m.safetensors", "--text", "a1"}, "is a language model")
	for _, args := range [][]string{
		{"ablate", "c.toml", "--out", "toy.tsv"},
		{"sweep", "run", "toy.tsv"},
		{"train", "--resume", "toy.tsv"},
		{"train", "--resume", "nope"},
		{"serve", "toy.tsv"},
		{"import", "nanogpt", "m.safetensors", "--meta", "toy.tsv", "--out", "x.safetensors"},
	} {
		check(args, "")
	}
	if _, err := os.Stat(filepath.Join(dir, "new")); err == nil {
		t.Errorf("a refused train --init left the folder new behind")
	}
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

// TestAblateShortTranslation: an ablation of a translation model trained
// on sentences shorter than the verse its row translates is a finished
// run with no sample, not a failed one.
func TestAblateShortTranslation(t *testing.T) {
	dir := t.TempDir()
	for name, text := range translationFiles() {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := gptg(t, dir, "ablate", "toy.toml", "--out", "ab")
	if r.code != 0 || !strings.Contains(r.stdout, "(no sample: cannot translate: the sentence has 12 words") {
		t.Fatalf("exit %d, stderr %q, stdout ends %q; want a finished row without a sample", r.code, r.stderr, r.stdout[max(0, len(r.stdout)-600):])
	}
}

// editMeta writes testdata's protocol-0 meta.pkl (text) as dir/meta.pkl
// after change.
func editMeta(t *testing.T, dir string, change func([]byte) []byte) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "nanogpt", "meta-protocol0.pkl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "meta.pkl"), change(b), 0o644); err != nil {
		t.Fatal(err)
	}
}
