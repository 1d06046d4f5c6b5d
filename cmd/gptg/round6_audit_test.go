package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Round six of hostile input (issue #24): what the independent audit found
// (testdata/hostile/probes_audit.py).

// TestProcessMemoryLimit: a model within train.max_memory (8 GiB by
// default) but beyond what the process may use (here ulimit -v 2.4 GiB,
// as a small container would give) is refused in one line with exit 2
// before anything is allocated; it used to train into the Go runtime's
// "fatal error: out of memory" trace (issue #24, the audit of round six).
func TestProcessMemoryLimit(t *testing.T) {
	dir := t.TempDir()
	cfg := "[data]\npath = \"builtin:tinyshakespeare\"\n[model]\ncontext = 512\nembedding = 256\nblocks = 4\nheads = 8\n[train]\nbatch = 32\nmax_steps = 2\nout = \"runs/big\"\n"
	if err := os.WriteFile(filepath.Join(dir, "big.toml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := gptg(t, dir, "graph", "big.toml"); r.code != 0 {
		t.Fatalf("gptg graph big.toml without a process limit: exit %d: %s", r.code, r.stderr)
	}
	for _, args := range [][]string{{"graph", "big.toml"}, {"train", "big.toml"}, {"ablate", "big.toml", "--out", "ab"}} {
		r := runGptgWith(t, dir, runOptions{ulimit: "-v 2500000"}, args...)
		want := "more than this process may still use"
		if r.code != 2 || !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "ulimit -v 2500000 KiB") ||
			strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("gptg %s under ulimit -v 2500000: exit %d, stderr %q; want exit 2 and one line with %q",
				strings.Join(args, " "), r.code, r.stderr, want)
		}
	}
	for _, d := range []string{"runs/big", "ab"} {
		if _, err := os.Stat(filepath.Join(dir, d)); err == nil {
			t.Errorf("the refused training left %s", d)
		}
	}
}

// TestTranslateLongStdinLine: a line of standard input past 1 MiB is bad
// input naming its line (exit 2), like a sentence too long for the model;
// it was exit 1 "bufio.Scanner: token too long" (round six's audit).
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
