package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gptg/gptg/internal/testmodel"
)

// The rows and tests of this file are the non-blocking findings left from
// round six's audit of hostile input (issue #24,
// testdata/hostile/probes_audit.py) and from its review.

func leftoverInputs(t *testing.T) []badInput {
	const cfg = "[model]\ncontext = 8\nembedding = 8\nblocks = 1\nheads = 1\n[train]\nmax_steps = 2\n"
	link := func(target, name string) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
		}
	}
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
		{name: "ablate /dev/stdin redirected from a config (each run read its own stdin and failed, exit 1, ab/ left)",
			files: map[string]string{"c.toml": cfg}, stdin: "c.toml",
			args: []string{"ablate", "/dev/stdin", "--out", "ab"}, code: 2, msg: "config /dev/stdin: is in /dev; each run reads its config again"},
		{name: "ablate of a config that is a link to /dev/stdin", files: map[string]string{"c.toml": cfg}, stdin: "c.toml", setup: link("/dev/stdin", "x.toml"),
			args: []string{"ablate", "x.toml", "--out", "ab"}, code: 2, msg: "config x.toml: leads to /dev/stdin; each run reads its config again"},
		{name: "train --init on a corpus missing some of the model's characters (said model.vocab, then \"leave vocab out\")",
			files: map[string]string{"c.toml": initCfg, "half.txt": half},
			args:  []string{"train", "c.toml", "--init", causalModel}, code: 2, msg: lacks},
		{name: "train --init with model.vocab set to the model's, on a corpus missing some of its characters",
			files: map[string]string{"c.toml": initCfg, "half.txt": half},
			args:  []string{"train", "c.toml", "--init", causalModel, "--set", fmt.Sprintf("model.vocab=%d", modelVocab)}, code: 2, msg: lacks},
		{name: "train --resume --force (--force was ignored silently)", args: []string{"train", "--resume", "runs/x", "--force"}, code: 2,
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

// TestDataOutputFailureLeavesNoFolders: data toy and data export make the
// folders --out names; when the write then fails (here ulimit -f 0: the
// file may not grow), the folders they made are removed again, and a
// folder that was there stays.
func TestDataOutputFailureLeavesNoFolders(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "kept"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"data", "toy", "--out", "a/b/t.txt", "--sentences", "10"},
		{"data", "export", "toy", "--out", "kept/b/c/t.txt"},
	} {
		r := runGptgWith(t, dir, runOptions{ulimit: "-f 0"}, args...)
		if r.code != 1 || !strings.Contains(r.stderr, "file too large") {
			t.Errorf("gptg %s under ulimit -f 0: exit %d, stderr %q; want exit 1, file too large", strings.Join(args, " "), r.code, r.stderr)
		}
	}
	if files := listFiles(t, dir); !slices.Equal(files, []string{"kept"}) {
		t.Errorf("files left: %v, want only kept (the folder that was there)", files)
	}
}

// TestFlagErrorsSayDoubleDash: the flag package's own errors (an unknown
// flag, a bad value, a missing argument) name flags as the help and the
// docs do, --threads, not Go's -threads, in every command.
func TestFlagErrorsSayDoubleDash(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"eval", "m.safetensors", "--threads", "-3"}, `invalid value "-3" for flag --threads:`},
		{[]string{"serve", ".", "--threads", "1.5"}, `invalid value "1.5" for flag --threads:`},
		{[]string{"sample", "m.safetensors", "--tokens"}, "flag needs an argument: --tokens"},
		{[]string{"graph", "c.toml", "--forward=maybe"}, `invalid boolean value "maybe" for --forward:`},
		{[]string{"ablate", "c.toml", "--jbos", "2"}, "flag provided but not defined: --jbos; did you mean --jobs?"},
		{[]string{"sweep", "run", "sw", "--index", "x"}, `invalid value "x" for flag --index:`},
	} {
		r := gptg(t, dir, c.args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("gptg %s: exit %d, stderr %q; want exit 2 and %q", strings.Join(c.args, " "), r.code, r.stderr, c.want)
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
