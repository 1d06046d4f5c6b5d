package main

import (
	"bytes"
	"os"
	"path/filepath"
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
		{name: "config: train.threads = 2^31", files: map[string]string{"c.toml": "[data]\npath = \"builtin:toy\"\n[train]\nthreads = 2147483648\n"},
			args: []string{"graph", "c.toml"}, code: 2, msg: "train.threads: 2147483648 is out of range (allowed: 0..4096)"},
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
