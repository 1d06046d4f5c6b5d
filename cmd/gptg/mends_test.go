package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Issue #24, session 12: the non-blocking leftovers of session 11.

func mendsInputs(t *testing.T) []badInput {
	return []badInput{
		{name: "train --replacing without --force", files: lmFiles(), args: []string{"train", "lm.toml", "--replacing", "-@0"}, code: 2,
			msg: "--replacing says which run --force may start over: give it with --force"},
		// ablate --force passes what it saw when it started: a second
		// ablation retrained a run the first had just trained.
		{name: "train --force --replacing a run the folder no longer holds", setup: lmRun,
			args: []string{"train", "lm.toml", "--force", "--replacing", "-@0"}, code: 1,
			msg: "run folder runs/lm: another process has trained in the run folder since (it holds "},
		// --init of the other kind of model advised "use gptg sample or
		// attention"; a translation corpus of other words said "a source
		// vocabulary of 11 words, the corpus one of 11 (or in another order)".
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
		{name: "train --init a translation model with other length limits (said model.context, which the config does not set)", files: toyTranslation(),
			setup: func(t *testing.T, dir string) { ok(t, dir, "train", "toy.toml", "--quiet") },
			args:  []string{"train", "toy.toml", "--init", "runs/toy", "--set", "train.out=runs/t2", "--set", "data.max_source=30"}, code: 2,
			msg: "runs/toy/model.safetensors holds another model than this config describes: it has model.context=5 (trained with data.max_source = 4, data.max_target = 4)"},
	}
}

// waitFor waits (up to a minute) until path exists.
func waitFor(t *testing.T, path string) {
	t.Helper()
	for start := time.Now(); !exists(path); time.Sleep(time.Millisecond) {
		if time.Since(start) > time.Minute {
			t.Fatalf("%s did not appear within a minute", path)
		}
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

// TestRunModelFilesReplaceLinks: a run's model.safetensors and
// checkpoint.safetensors are files it names itself; a link planted at
// their path once the run has started (and cleared the folder) is
// replaced by the run's file, never written through to the file it
// names. Both were written with link-following modelfile.Write.
func TestRunModelFilesReplaceLinks(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"precious.txt": "precious",
		"c.toml": "[data]\npath = \"builtin:tinyshakespeare\"\n[model]\ncontext = 8\nembedding = 8\nblocks = 1\nheads = 1\n" +
			"[train]\nbatch = 2\nmax_steps = 1000\neval_batches = 1\ncheckpoint_every = 100000\nout = \"runs/c\"\n"})
	cmd := gptgCommand(context.Background(), dir, "", "train", "c.toml", "--quiet")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	run := filepath.Join(dir, "runs", "c")
	waitFor(t, filepath.Join(run, "metrics.jsonl")) // written once the folder is cleared
	cmd.Process.Signal(syscall.SIGSTOP)
	for _, name := range []string{"model.safetensors", "checkpoint.safetensors"} {
		if err := os.Symlink("../../precious.txt", filepath.Join(run, name)); err != nil {
			t.Fatalf("planting a link at %s while the run trains: %v (did it finish first?)", name, err)
		}
	}
	cmd.Process.Signal(syscall.SIGCONT)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("gptg train c.toml: %v: %s", err, stderr.String())
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "precious.txt")); string(b) != "precious" {
		t.Errorf("the run wrote through a link in its folder: precious.txt holds %.30q", b)
	}
	for _, name := range []string{"model.safetensors", "checkpoint.safetensors"} {
		if info, err := os.Lstat(filepath.Join(run, name)); err != nil || !info.Mode().IsRegular() {
			t.Errorf("runs/c/%s is not a regular file after the run (%v)", name, err)
		}
	}
	ok(t, dir, "inspect", "runs/c")
}

// TestAblateForceLeavesAnotherRunnersRun: two `ablate --force` at once
// both retrained a run (the run lock is taken only inside each training):
// the second cleared the run the first had just trained. An ablation now
// starts over only the run it saw when it started; one that another
// runner replaced since is measured as it is. Here ablation B trains a
// (slow) then b; while it trains a (B stopped), ablation A retrains b.
func TestAblateForceLeavesAnotherRunnersRun(t *testing.T) {
	dir := t.TempDir()
	const cfg = "[data]\npath = \"builtin:tinyshakespeare\"\n[model]\ncontext = 8\nembedding = 8\nblocks = 1\nheads = 1\n[sample]\nprompt = \"F\"\n[train]\nbatch = 2\neval_batches = 1\n"
	writeFiles(t, dir, map[string]string{"a.toml": cfg + "max_steps = 1000\n", "b.toml": cfg + "max_steps = 2\n"})
	ok(t, dir, "ablate", "b.toml", "--out", "ab")
	before := runID(t, filepath.Join(dir, "ab", "b"))
	b := gptgCommand(context.Background(), dir, "", "ablate", "a.toml", "b.toml", "--force", "--out", "ab")
	var out, stderr strings.Builder
	b.Stdout, b.Stderr = &out, &stderr
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	defer b.Process.Kill()
	waitFor(t, filepath.Join(dir, "ab", "a", "metrics.jsonl")) // B has looked at b and trains a
	b.Process.Signal(syscall.SIGSTOP)
	if runID(t, filepath.Join(dir, "ab", "b")) != before {
		t.Fatal("ablation B reached b before it was stopped: the test cannot tell")
	}
	ok(t, dir, "ablate", "b.toml", "--force", "--out", "ab")
	mid := runID(t, filepath.Join(dir, "ab", "b"))
	b.Process.Signal(syscall.SIGCONT)
	if err := b.Wait(); err != nil {
		t.Fatalf("ablation B: %v\n%s\n%s", err, out.String(), stderr.String())
	}
	if mid == before {
		t.Fatalf("ablation A did not retrain b (run id %s before and after)", before)
	}
	if after := runID(t, filepath.Join(dir, "ab", "b")); after != mid || !strings.Contains(out.String(), "| b |") {
		t.Errorf("ablation B retrained b after ablation A had (run %s, then %s; want A's run kept), or left it out:\n%s\n%s", mid, after, out.String(), stderr.String())
	}
}
