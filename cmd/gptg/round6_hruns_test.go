package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Round six of hostile input (issue #24), lane "runs": run folders whose
// files are links, temporary files a killed run leaves, and config values
// that reached an allocation or an overflow. The probes that found them
// are testdata/hostile/probes_hruns.py.

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

// linkOut moves dir/run/name to dir/outside-name and leaves a link to it.
func linkOut(t *testing.T, dir, run, name string) string {
	t.Helper()
	p, out := filepath.Join(dir, run, name), filepath.Join(dir, "outside-"+name)
	if err := os.Rename(p, out); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("..", "..", "outside-"+name), p); err != nil {
		t.Fatal(err)
	}
	return out
}

func round6RunsInputs(t *testing.T) []badInput {
	return []badInput{
		{name: "train --resume: metrics.jsonl a link to a file outside the run", setup: func(t *testing.T, dir string) {
			lmRun(t, dir)
			linkOut(t, dir, "runs/lm", "metrics.jsonl")
		}, args: []string{"train", "--resume", "runs/lm", "--set", "train.max_steps=4"}, code: 1,
			msg: `runs/lm/metrics.jsonl is a symbolic link (to ../../outside-metrics.jsonl): a resume rewrites the run's files`},
		{name: "train --resume: a translation run's checkpoint a link outside the run", setup: func(t *testing.T, dir string) {
			for name, text := range translationFiles() {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			translationRun(t, dir)
			linkOut(t, dir, "runs/toy", "checkpoint.safetensors")
		}, args: []string{"train", "--resume", "runs/toy", "--set", "train.max_steps=8"}, code: 1,
			msg: "runs/toy/checkpoint.safetensors is a symbolic link"},
		{name: "train --resume: the lock file a hard link to a file outside the run", setup: func(t *testing.T, dir string) {
			lmRun(t, dir)
			hardLinkLock(t, dir)
		}, args: []string{"train", "--resume", "runs/lm", "--set", "train.max_steps=4"}, code: 1,
			msg: "runs/lm: its lock file .gptg.lock has 2 names (a hard link to another file, whose content gptg would overwrite): remove runs/lm/.gptg.lock"},
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

// hardLinkLock makes runs/lm's lock file a second name of dir/precious.txt.
func hardLinkLock(t *testing.T, dir string) {
	t.Helper()
	lock := filepath.Join(dir, "runs/lm/.gptg.lock")
	if err := os.WriteFile(filepath.Join(dir, "precious.txt"), []byte("keep me\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(dir, "precious.txt"), lock); err != nil {
		t.Fatal(err)
	}
}

// TestLockHardLinkKeepsFile: the lock file as a hard link to another file
// is refused before the pid is written into it (it was: "keep me" became
// the pid).
func TestLockHardLinkKeepsFile(t *testing.T) {
	dir := t.TempDir()
	lmRun(t, dir)
	hardLinkLock(t, dir)
	for _, args := range [][]string{{"train", "--resume", "runs/lm", "--set", "train.max_steps=4"}, {"train", "lm.toml", "--force"}} {
		r := gptg(t, dir, args...)
		if r.code != 1 || !strings.Contains(r.stderr, "hard link") {
			t.Errorf("%v: exit %d, stderr %q; want exit 1 naming the hard link", args, r.code, r.stderr)
		}
		if b, _ := os.ReadFile(filepath.Join(dir, "precious.txt")); string(b) != "keep me\n" {
			t.Errorf("%v: the file the lock file links to now holds %q", args, b)
		}
	}
}

// TestResumeWritesNoLinkedFile: a resume of a run one of whose four files
// is a link to a file outside the run folder is refused, and the file the
// link names keeps its bytes (before the fix every one was rewritten or
// appended to through the link).
func TestResumeWritesNoLinkedFile(t *testing.T) {
	for _, name := range []string{"config.toml", "metrics.jsonl", "checkpoint.safetensors", "model.safetensors"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			lmRun(t, dir)
			out := linkOut(t, dir, "runs/lm", name)
			before, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			r := gptg(t, dir, "train", "--resume", "runs/lm", "--set", "train.max_steps=4")
			if r.code != 1 || !strings.Contains(r.stderr, "is a symbolic link") {
				t.Errorf("exit %d, stderr %q; want exit 1 naming the link", r.code, r.stderr)
			}
			if after, err := os.ReadFile(out); err != nil || !bytes.Equal(after, before) {
				t.Errorf("the resume wrote through runs/lm/%s into the file outside the run", name)
			}
		})
	}
}

// TestStaleTempsRemoved: the temporary files a killed run leaves beside its
// checkpoint and model (atomicfile's .NAME.tmpNNN) are deleted by the next
// resume or --force start under the run's lock; any other file stays.
func TestStaleTempsRemoved(t *testing.T) {
	dir := t.TempDir()
	lmRun(t, dir)
	run := filepath.Join(dir, "runs/lm")
	stale := []string{".checkpoint.safetensors.tmp123", ".model.safetensors.tmp9", ".metrics.jsonl.tmp1", ".config.toml.tmp77"}
	keep := []string{"notes.txt", ".other.tmp5"}
	write := func() {
		for _, n := range append(stale, keep...) {
			if err := os.WriteFile(filepath.Join(run, n), []byte("half"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	check := func(how string) {
		for _, n := range stale {
			if _, err := os.Lstat(filepath.Join(run, n)); err == nil {
				t.Errorf("%s left %s behind", how, n)
			}
		}
		for _, n := range keep {
			if _, err := os.Lstat(filepath.Join(run, n)); err != nil {
				t.Errorf("%s removed %s, which is not the run's", how, n)
			}
		}
	}
	write()
	if r := gptg(t, dir, "train", "--resume", "runs/lm", "--set", "train.max_steps=4", "--quiet"); r.code != 0 {
		t.Fatalf("resume: exit %d: %s", r.code, r.stderr)
	}
	check("train --resume")
	write()
	if r := gptg(t, dir, "train", "lm.toml", "--force", "--quiet"); r.code != 0 {
		t.Fatalf("train --force: exit %d: %s", r.code, r.stderr)
	}
	check("train --force")
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
// counts, and that was unbounded: a word corpus's map of distinct words
// (before the vocabulary bound was checked, after the whole file: 6M
// distinct words took 573 MB, a gigabyte of them many gigabytes) and every
// kept sentence pair of a pairs file (94 MB of 3-word pairs took 2.55 GB;
// the 1 GiB a corpus may be, tens of gigabytes). Both now stop at their
// bound, in bounded memory.
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
